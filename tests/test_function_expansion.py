"""Ops that ONNX defines by a function body cost what their body costs, at every opset.

Bodies read omitted attributes from their defaults; a node of an opset whose version of the op has
no body yet (Relu-6, Softmax-11, Clip-6) costs what its upgraded form costs.
"""

from __future__ import annotations

import pytest

import onnxflops
from helpers import model, node, weight

N, C, H, W = 2, 4, 6, 6
E = N * C * H * W


def flops_of(op_type: str, opset: int, **attrs) -> int:
    report = onnxflops.count(model([node(op_type, ["x"], ["y"], **attrs)],
                                   {"x": [N, C, H, W]}, opset=opset))
    assert not report.uncosted, report.uncosted
    return report.total.flops


@pytest.mark.parametrize("op_type, opset, per_element", [
    ("LeakyRelu", 22, 2),    # Less, Mul (Where selects)
    ("Elu", 22, 4),          # Less, Exp, Sub, Mul
    ("HardSigmoid", 22, 4),  # Mul, Add, Max, Min
    ("Swish", 24, 3),        # Mul, Sigmoid, Mul
])
def test_omitted_attributes_take_their_defaults(op_type, opset, per_element):
    assert flops_of(op_type, opset) == per_element * E


@pytest.mark.parametrize("op_type, opset, attrs, flops", [
    ("Relu", 6, {}, E),                              # Max(x, 0)
    ("Elu", 1, {}, 4 * E),
    ("LeakyRelu", 6, {"alpha": 0.2}, 2 * E),
    ("Clip", 6, {"min": 0.0, "max": 6.0}, 2 * E),    # Max then Min
    ("Clip", 11, {}, 0),                             # no bounds: the identity
    # Softmax-11 flattens to [N, C·H·W] rows: max (k − 1), sub, exp, sum (k − 1), div per row.
    ("Softmax", 11, {"axis": 1}, N * (2 * (C * H * W - 1) + 3 * C * H * W)),
    # ReduceL2-13 (axes an attribute): square, sum, sqrt.
    ("ReduceL2", 13, {"axes": [1], "keepdims": 1}, E + (E - E // C) + E // C),
])
def test_older_opsets_cost_their_upgraded_form(op_type, opset, attrs, flops):
    assert flops_of(op_type, opset, **attrs) == flops


def test_layer_norm_before_onnx_had_it_is_onnxruntimes_with_the_same_meaning():
    # onnxruntime's optimizer writes LayerNormalization into opset-13 models; ONNX added it at 17.
    n, s, h = 2, 5, 8
    nodes = [node("LayerNormalization", ["x", "g", "b"], ["y"]), node("Relu", ["y"], ["r"])]
    weights = [weight("g", (h,)), weight("b", (h,))]
    at_13 = onnxflops.count(model(nodes, {"x": [n, s, h]}, weights, opset=13))
    at_17 = onnxflops.count(model(nodes, {"x": [n, s, h]}, weights, opset=17))
    assert not at_13.uncosted and not at_17.uncosted
    assert at_13.total.flops == at_17.total.flops > n * s * h
    assert at_13.total.params == 2 * h


@pytest.mark.parametrize("op_type, attrs", [("GroupNormalization", {"num_groups": 2}),
                                            ("MeanVarianceNormalization", {})])
def test_normalizations_onnx_infers_no_shape_for_keep_the_graph_costable(op_type, attrs):
    inputs = ["x", "g", "b"] if op_type == "GroupNormalization" else ["x"]
    weights = [weight("g", (C,)), weight("b", (C,))] if op_type == "GroupNormalization" else []
    nodes = [node(op_type, inputs, ["y"], **attrs), node("Relu", ["y"], ["r"])]
    report = onnxflops.count(model(nodes, {"x": [N, C, H, W]}, weights, opset=21))
    assert not report.uncosted, report.uncosted
    assert report.nodes[-1].flops == E
