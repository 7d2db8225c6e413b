"""Nodes that differ only in a coefficient (a FLOAT attribute: alpha, epsilon) are alike.

A graph whose every LeakyRelu or Gemm has its own alpha is typed by ONNX once per kind and a
function body is expanded once per kind, the coefficient left out; a rule that reads one (Gemm's
alpha, a per-call rule in a body) still costs each node by its own value.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import onnxflops
import onnxflops.counting.counter as counter
from helpers import FLOAT, costed, model, node, typed_model, weight
from onnxflops.analysis import attribute_key, coefficients_shape_body
from onnxflops.costs import Cost

N = 30
E = 4 * 4  # elements of every tensor below


def chain(op_type: str, alphas: list[float], weights: list[str] = (), **attrs) -> list:
    return [node(op_type, [f"t{i}", *weights], [f"t{i + 1}"], alpha=alpha, **attrs)
            for i, alpha in enumerate(alphas)]


def test_ops_differing_only_in_alpha_are_inferred_and_expanded_once(monkeypatch):
    inferred, expanded = [], []
    infer, expand = onnx.shape_inference.infer_node_outputs, counter.expansion_model

    def counted_inference(schema, proto, *args, **kwargs):
        inferred.append(proto.op_type)
        return infer(schema, proto, *args, **kwargs)

    def counted_expansion(proto, *args, **kwargs):
        expanded.append(proto.op_type)
        return expand(proto, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_node_outputs", counted_inference)
    monkeypatch.setattr(counter, "expansion_model", counted_expansion)
    alphas = [0.01 * (1 + i) for i in range(N)]
    report = costed(model(chain("LeakyRelu", alphas), {"t0": [4, 4]}))
    assert inferred.count("LeakyRelu") == 1 and expanded.count("LeakyRelu") == 1
    assert report.total.flops == N * 2 * E  # Less and Mul per element (Where selects)
    assert [n.output_shapes for n in report.nodes] == [[[4, 4]]] * N


def test_a_rule_reading_a_coefficient_costs_each_node_by_its_own():
    # Gemm: 2 FLOPs a MAC (64 MACs), +numel(Y) for alpha ≠ 1, +numel(Y) for the C add,
    # +numel(C) for beta ≠ 1.
    alphas_betas = [(0.5, 1.0), (1.0, 1.0), (1.0, 2.0), (0.5, 1.0), (1.0, 1.0)]
    nodes = [node("Gemm", [f"t{i}", "w", "c"], [f"t{i + 1}"], alpha=a, beta=b)
             for i, (a, b) in enumerate(alphas_betas)]
    report = costed(model(nodes, {"t0": [4, 4]}, [weight("w", (4, 4)), weight("c", (4,))]))
    assert [n.flops - 128 for n in report.nodes] == [32, 16, 20, 32, 16]
    assert report.total.macs == len(nodes) * E * 4


def onnx_has(op_type: str, since: int, opset: int | None = None) -> bool:
    """Whether the installed onnx defines `op_type` at `opset` by its version `since`."""
    try:
        return onnx.defs.get_schema(op_type, opset or since).since_version == since
    except onnx.defs.SchemaError:
        return False


@pytest.mark.skipif(not onnx_has("SwiGLU", 28), reason="this onnx has no SwiGLU")
def test_a_body_rule_reading_a_coefficient_costs_each_node_by_its_own():
    # SwiGLU's body is Swish(A, alpha=@alpha)·B. A per-call Swish rule that reads alpha makes the
    # body's cost depend on it, though ONNX's own Swish body does not.
    def swish(n) -> Cost:
        """alpha·numel(Y)"""
        return Cost(flops=int(n.attr("alpha", 1.0)) * n.output().numel)

    nodes = [helper.make_node("SwiGLU", ["a", "b"], [f"y{i}"], alpha=alpha)
             for i, alpha in enumerate([1.0, 3.0, 1.0, 5.0])]
    inputs = {"a": (FLOAT, [4, 4]), "b": (FLOAT, [4, 4])}
    report = costed(typed_model(nodes, inputs, outputs=[f"y{i}" for i in range(4)]),
                    rules={("", "Swish"): swish})
    assert [n.flops for n in report.nodes] == [2 * E, 4 * E, 2 * E, 6 * E]  # Swish, then Mul
    standard = costed(typed_model(nodes, inputs, outputs=[f"y{i}" for i in range(4)]))
    assert [n.flops for n in standard.nodes] == [4 * E] * 4  # Mul, Sigmoid, Mul; Mul


@pytest.mark.parametrize("op_type, opset, since, shapes", [
    ("LeakyRelu", 16, 16, False), ("LeakyRelu", 6, 6, False),  # 6: upgraded to 16's body
    ("Selu", 22, 22, False), ("Shrink", 9, 9, False),
    ("SwiGLU", 28, 28, False),  # alpha reaches a nested Swish, of which the same holds
    ("Celu", 28, 28, False),    # the scaled input reaches a nested Elu
    ("LayerNormalization", 17, 17, True),  # a body built per node
    ("Relu", 14, 14, False),    # no coefficient
])
def test_which_coefficients_may_shape_a_function_body(op_type, opset, since, shapes):
    if not onnx_has(op_type, since, opset):
        pytest.skip(f"this onnx has no {op_type}-{since}")
    assert coefficients_shape_body(op_type, "", opset) is shapes


def test_a_kind_leaves_out_only_coefficients_of_onnx_schemas():
    def key(op_type, domain="", **attrs):
        return attribute_key(helper.make_node(op_type, ["x"], ["y"], domain=domain, **attrs), 17)

    assert key("Gemm", alpha=0.5, transA=1) == key("Gemm", alpha=2.0, transA=1)
    assert key("Gemm", alpha=0.5, transA=1) != key("Gemm", alpha=0.5, transA=0)
    assert key("Gemm", alpha=0.5) != key("Gemm", beta=0.5)
    assert key("Constant", value_float=1.0) != key("Constant", value_float=2.0)
    assert key("Scale", "com.acme", alpha=1.0) != key("Scale", "com.acme", alpha=2.0)
    # A FLOAT attribute under a name the schema gives another type is kept whole.
    assert key("Transpose", perm=1.0) != key("Transpose", perm=2.0)


def test_distinct_coefficients_give_the_counts_of_one_model_per_value():
    alphas = [0.5, 1.0, 0.5, 0.25, 1.0]
    together = costed(model(chain("Gemm", alphas, ["w"]), {"t0": [4, 4]}, [weight("w", (4, 4))]))
    for i, alpha in enumerate(alphas):
        alone = costed(model(chain("Gemm", [alpha], ["w"]), {"t0": [4, 4]},
                             [weight("w", (4, 4), value=np.ones((4, 4)))]))
        assert (together.nodes[i].macs, together.nodes[i].flops) == \
            (alone.total.macs, alone.total.flops) == (64, 128 + (0 if alpha == 1.0 else 16))
