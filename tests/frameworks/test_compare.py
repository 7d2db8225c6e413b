"""compare / assert_same_cost: migrations validated layer by layer, outputs checked under onnxruntime."""

from __future__ import annotations

import json

import numpy as np
import pytest

import onnxflops
from helpers import converted
from onnxflops.models import pair
from onnxflops.cli import main

keras = pytest.importorskip("keras")
torch = pytest.importorskip("torch")
nn = torch.nn


def test_the_two_torch_exporters_compare_the_same():
    result = onnxflops.compare(converted("resnet_bottleneck", "dynamo"),
                               converted("resnet_bottleneck", "legacy"))
    assert result.same, result.to_text()
    assert [row.status for row in result.layers] == ["same"] * 6  # 3 convs, 3 BatchNorms


def test_a_keras_port_compares_the_same_with_layers_grouped_where_frameworks_split_them():
    result = onnxflops.assert_same_cost(converted("transformer_encoder", "keras"),
                                        converted("transformer_encoder", "dynamo"))
    attention = result.layers[0]
    assert attention.status == "regrouped"  # Keras's query/key/value/output layers vs one module
    assert [x.name for x in attention.b] == ["attention"]
    assert sum(x.totals.macs for x in attention.a) == 3 * 10_240 + 6_400 + 10_240


def test_a_nested_keras_model_is_aligned_layer_by_layer_with_its_flat_torch_twin():
    """A Sequential used as a layer of a Keras model (as a keras.applications backbone inside a
    classifier): each of its layers is a row of its own, not the backbone as one."""
    backbone = keras.Sequential([keras.layers.Dense(16, activation="relu", name="fc1"),
                                 keras.layers.Dense(8, name="fc2")], name="backbone")
    x = keras.Input((4,), name="x")
    classifier = keras.Model(x, keras.layers.Dense(3, name="head")(backbone(x)))
    twin = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8), nn.Linear(8, 3))
    result = onnxflops.assert_same_cost(classifier, twin, inputs_b=((1, 4),))
    assert [row.status for row in result.layers] == ["same"] * 3
    assert [[x.name for x in row.a] for row in result.layers] == [
        ["backbone_1/fc1_1"], ["backbone_1/fc2_1"], ["head_1"]]
    assert [row.a[0].totals.macs for row in result.layers] == [4 * 16, 16 * 8, 8 * 3]


def test_the_lstm_bias_difference_is_shown_and_explained():
    result = onnxflops.compare(converted("lstm2", "keras"), converted("lstm2", "dynamo"))
    assert not result.same
    assert "total params: 3.84 K vs 3.97 K" in result.differences
    text = result.to_text()
    assert "two per gate (b_ih and b_hh)" in text and "DIFFERENT" in text


def test_a_layer_missing_from_the_port_is_flagged():
    full = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))
    port = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    result = onnxflops.compare(full, port, inputs_a=((1, 8),), inputs_b=((1, 8),))
    assert not result.same
    assert [row.status for row in result.layers] == ["same", "missing", "same"]
    assert "layer 2 of a has no counterpart in b" in result.differences


def test_assert_same_cost_raises_with_the_comparison():
    with pytest.raises(AssertionError, match="total macs"):
        onnxflops.assert_same_cost(nn.Linear(4, 4), nn.Linear(4, 5), inputs_a=((1, 4),),
                                   inputs_b=((1, 4),))


def test_totals_that_read_alike_rounded_are_shown_exactly():
    # 1000·1000 + 1000 = 1,001,000 params against 1,001,001 with one more learned offset
    wide = nn.Linear(1000, 1000)

    class PlusOne(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(1000, 1000)
            self.offset = nn.Parameter(torch.ones(1))

        def forward(self, x):
            return self.linear(x) + self.offset

    result = onnxflops.compare(wide, PlusOne(), inputs_a=((1, 1000),), inputs_b=((1, 1000),))
    assert "total params: 1,001,000 vs 1,001,001" in result.differences
    assert "+1" in result.to_text()


def test_tolerance_is_relative():
    wide, wider = nn.Linear(100, 100), nn.Linear(100, 101)
    options = dict(inputs_a=((1, 100),), inputs_b=((1, 100),))
    assert not onnxflops.compare(wide, wider, **options).same
    assert onnxflops.compare(wide, wider, tolerance=0.02, **options).same


def port_conv_bn(keras_model, module) -> None:
    """What a user's migration script does: copy Keras weights (HWIO) into the torch twin (OIHW)."""
    conv, bn = keras_model.get_layer("conv"), keras_model.get_layer("bn")
    with torch.no_grad():
        module[0].weight.copy_(torch.from_numpy(conv.kernel.numpy().transpose(3, 2, 0, 1)))
        for name, source in (("weight", bn.gamma), ("bias", bn.beta),
                             ("running_mean", bn.moving_mean), ("running_var", bn.moving_variance)):
            getattr(module[1], name).copy_(torch.from_numpy(source.numpy()))


class TestOutputs:
    INPUTS = dict(inputs_b=((1, 3, 500, 500),))  # the Keras model declares 500×500×3

    def models(self):
        p = pair("seed002_conv_bn_relu")
        keras_model, module = p.keras_model(), p.torch_module()
        rng = np.random.default_rng(0)
        for w in keras_model.weights:
            w.assign(rng.uniform(0.5, 1.5, w.shape).astype("float32"))
        return keras_model, module

    def test_a_port_with_copied_weights_gives_the_same_outputs_across_layouts(self):
        keras_model, module = self.models()
        port_conv_bn(keras_model, module)
        result = onnxflops.compare(keras_model, module, check_outputs=True, **self.INPUTS)
        assert result.same, result.to_text()
        assert result.outputs.max_rel < 1e-5
        assert any("NCHW" in note for note in result.outputs.notes)

    def test_a_port_without_its_weights_differs_in_outputs_only(self):
        keras_model, module = self.models()
        result = onnxflops.compare(keras_model, module, check_outputs=True, **self.INPUTS)
        assert not result.differences
        assert not result.outputs.ok and not result.same

    def test_outputs_of_the_two_exporters_agree(self):
        module = pair("lenet").torch_module()
        from onnxflops.converters import torch_to_onnx

        a = torch_to_onnx(module, ((1, 1, 32, 32),), keep_weights=True)
        b = torch_to_onnx(module, ((1, 1, 32, 32),), exporter="legacy", keep_weights=True)
        result = onnxflops.compare(a, b, check_outputs=True)
        assert result.same and result.outputs.max_abs < 1e-5


class TestCommandLine:
    def test_exit_status_0_when_same_and_1_when_different(self, capsys):
        assert main(["compare", "onnxflops.models.keras_models:mlp",
                     "onnxflops.models.torch_models:mlp",
                     "--input", "input=1x64"]) == 0
        assert "SAME" in capsys.readouterr().out
        assert main(["compare", "onnxflops.models.keras_models:lstm2",
                     "onnxflops.models.torch_models:lstm2",
                     "--input", "x=1x12x10"]) == 1
        assert "DIFFERENT" in capsys.readouterr().out

    def test_shared_input_bindings_go_to_the_model_that_has_that_input(self, capsys):
        # The Keras model declares x as 8×8×32 (NHWC); only the torch factory takes x=1x32x8x8.
        assert main(["compare", "onnxflops.models.keras_models:resnet_bottleneck",
                     "onnxflops.models.torch_models:resnet_bottleneck", "--input", "x=1x32x8x8",
                     "--json"]) == 0
        document = json.loads(capsys.readouterr().out)
        assert document["same"] and document["a"]["total"]["macs"] == 69_632
