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


@pytest.mark.parametrize("layer, within", [
    ("model_1/dense_1", "dense_1"),
    ("classifier_1/backbone_1/fc1_1", "backbone_1/fc1_1"),  # a nested model's layer
    ("model/dense", "dense"),
    ("layer1.0.conv1", "layer1.0.conv1"),
    ("", ""),
])
def test_a_layer_is_named_below_its_models_scope(layer, within):
    assert layer_in_model(layer) == within
