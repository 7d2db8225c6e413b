"""Nodes are grouped into the layers their exporter's name scopes name."""

from __future__ import annotations

import onnx
import pytest

from onnxflops.results.layers import layer_in_model, layer_of


def named(name: str, scopes: str | None = None) -> onnx.NodeProto:
    node = onnx.helper.make_node("Relu", ["x"], ["y"], name=name)
    if scopes is not None:
        node.metadata_props.add(key="pkg.torch.onnx.name_scopes", value=scopes)
    return node


@pytest.mark.parametrize("node, layer", [
    (named("/layer1/layer1.0/conv1/Conv"), "layer1.0.conv1"),
    (named("/features/features.3/Relu"), "features.3"),
    (named("node_conv2d", "['', 'layer1', 'layer1.0', 'layer1.0.conv1', 'conv2d']"),
     "layer1.0.conv1"),
    (named("node_add", "['', 'add']"), ""),
    (named("model_1/encoder_1/ff1_1/Tensordot/MatMul"), "model_1/encoder_1/ff1_1"),
    (named("model/dense/BiasAdd"), "model/dense"),
    (named("Transpose__47"), ""),
])
def test_layer_of_each_exporters_names(node, layer):
    assert layer_of(node) == layer


@pytest.mark.parametrize("scope, layer", [
    # a detector's `for m in self.model[:-1]`: the first module of the slice is model.0
    ("model.slice(None, -1, None).0.stem1.conv", "model.0.stem1.conv"),
    ("model.slice(1, None, None).0.conv", "model.1.conv"),  # self.model[1:]: model.1
    ("model.slice(1, None, 2).2", "model.5"),  # self.model[1::2]: positions 1, 3, 5
    ("blocks[slice(2, 4, None)][1].attn", "blocks.3.attn"),
    ("model.slice(-3, -1, None).0.cv1", "model[-3:-1].0.cv1"),  # the length decides: as written
])
def test_a_module_reached_through_a_slice_is_named_by_its_place_in_the_container(scope, layer):
    scopes = str(["", "model", scope, "conv2d"])
    assert layer_of(named("node_conv2d", scopes)) == layer


@pytest.mark.parametrize("layer, within", [
    ("model_1/dense_1", "dense_1"),
    ("classifier_1/backbone_1/fc1_1", "backbone_1/fc1_1"),  # a nested model's layer
    ("model/dense", "dense"),
    ("layer1.0.conv1", "layer1.0.conv1"),
    ("", ""),
])
def test_a_layer_is_named_below_its_models_scope(layer, within):
    assert layer_in_model(layer) == within
