"""ONNX's preview ops: FlexAttention (ai.onnx.preview) and the optimizer steps of
ai.onnx.preview.training, costed from their definitions' pseudo code."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

import onnxflops

FLOAT = TensorProto.FLOAT


def _preview_model(op_type: str, domain: str, inputs: dict, outputs: list, **attrs):
    graph = helper.make_graph(
        [helper.make_node(op_type, list(inputs), outputs, domain=domain, **attrs)], "preview",
        [helper.make_tensor_value_info(name, dtype, shape) for name, (dtype, shape) in inputs.items()],
        [helper.make_tensor_value_info(o, FLOAT, None) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23),
                                                   helper.make_opsetid(domain, 1)])


def _optimizer(op_type: str, tensors: list[tuple], groups: int, outputs: int, **attrs):
    """R, T, then `groups` lists of tensors shaped as `tensors` (X's, then G's, ...)."""
    inputs = {"R": (FLOAT, []), "T": (TensorProto.INT64, [])}
    for g in range(groups):
        inputs.update({f"t{g}_{i}": (FLOAT, shape) for i, shape in enumerate(tensors)})
    names = [f"out{k}" for k in range(outputs * len(tensors))]
    return _preview_model(op_type, "ai.onnx.preview.training", inputs, names, **attrs)


@pytest.mark.parametrize("mode, per_element", [("standard", 7), ("nesterov", 9)])
def test_momentum_updates_each_element(mode, per_element):
    # X 3x4: G' = c·X + G (2), V' = α·V + β·G' (3), X − R·V' (2); nesterov X − R·(G' + α·V') (4)
    report = onnxflops.count(_optimizer("Momentum", [(3, 4)], 3, 2, mode=mode, alpha=0.9,
                                        beta=1.0, norm_coefficient=0.0))
    assert report.total.flops == per_element * 12


def test_adagrad_updates_each_element_and_its_rate_once():
    # X of 5: G' (2), H + G'² (2), √H' + ε (2), X − r·G'/(·) (3); r = R/(1 + T·d): 3 once
    report = onnxflops.count(_optimizer("Adagrad", [(5,)], 3, 2))
    assert report.total.flops == 9 * 5 + 3


def test_adam_updates_every_tensor_it_is_given():
    # X1 2x3 and X2 of 4: 10 elements of 15 FLOPs each; the rate R' once: 7
    report = onnxflops.count(_optimizer("Adam", [(2, 3), (4,)], 4, 3))
    assert report.total.flops == 15 * 10 + 7


@pytest.mark.skipif(not onnx.defs.has("FlexAttention", "ai.onnx.preview"),
                    reason="this onnx defines no FlexAttention (onnx 1.19, the tested floor)")
def test_flex_attention_is_two_products_over_its_scores():
    # Q 1x2x4x8, K 1x2x6x8, V 1x2x6x5: 1·2·4·6 = 48 scores, each of 8 products (Q·Kᵀ) and
    # feeding 5 (P·V): 48·13 = 624 MACs
    m = _preview_model("FlexAttention", "ai.onnx.preview",
                       {"Q": (FLOAT, [1, 2, 4, 8]), "K": (FLOAT, [1, 2, 6, 8]),
                        "V": (FLOAT, [1, 2, 6, 5])}, ["Y"])
    report = onnxflops.count(m)
    assert report.complete
    assert report.total.macs == 48 * (8 + 5)


def _gradient_model(xs: list[str], zs: list[str], outputs: list[str]):
    """The example of Gradient's definition: W → Conv(X) → H → Flatten → Gemm(·, Z) → Y, every
    tensor a graph input, and Gradient(xs, zs, y="Y") after it. X 1x1x5x5, W 1x1x3x3: H 1x1x3x3;
    Z 9x4: Y 1x4."""
    shapes = {"X": [1, 1, 5, 5], "W": [1, 1, 3, 3], "Z": [9, 4]}
    nodes = [helper.make_node("Conv", ["X", "W"], ["H"], name="conv"),
             helper.make_node("Flatten", ["H"], ["F"], name="flatten"),
             helper.make_node("Gemm", ["F", "Z"], ["Y"], name="gemm"),
             helper.make_node("Gradient", xs + zs, outputs, name="gradient",
                              domain="ai.onnx.preview.training", xs=xs, zs=zs, y="Y")]
    graph = helper.make_graph(
        nodes, "gradient", [helper.make_tensor_value_info(n, FLOAT, s) for n, s in shapes.items()],
        [helper.make_tensor_value_info("Y", FLOAT, [1, 4])]
        + [helper.make_tensor_value_info(o, FLOAT, shapes[x]) for o, x in zip(outputs, xs) if o])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                   helper.make_opsetid("ai.onnx.preview.training", 1)])


@pytest.mark.parametrize("xs, outputs, macs", [
    # dY/dW and dY/dZ: the Gemm's two products, dF = dY·Zᵀ and dZ = Fᵀ·dY, 1·9·4 MACs each, and
    # the Conv's dW, as many MACs as its forward, 3·3 outputs × 3·3 taps; no dX (X is in zs)
    (["W", "Z"], ["dW", "dZ"], 2 * 36 + 81),
    # dY/dW alone: dF and the Conv's dW; Z carries no gradient, so no dZ product
    (["W", "Z"], ["dW", ""], 36 + 81),
    # dY/dZ alone: dZ = Fᵀ·dY; nothing flows into the Conv
    (["W", "Z"], ["", "dZ"], 36),
])
def test_gradient_costs_the_backward_pass_from_y_to_the_xs_it_outputs(xs, outputs, macs):
    """As torch's autograd runs it (FlopCounterMode: 2 FLOPs per MAC, the same products); the
    forward nodes count once each, as the model runs them: Conv 81 MACs, Gemm 36."""
    report = onnxflops.count(_gradient_model(xs, ["X"], outputs))
    by_name = {n.name: n for n in report.nodes}
    assert by_name["gradient"].macs == macs and by_name["gradient"].flops == 2 * macs
    assert report.total.macs == 81 + 36 + macs and not report.uncosted
