"""Ops torch exports as nodes of their own domain (library custom ops, a grouped matmul) and
experts' products over weights gathered per token: shapes, costs and the routed label, on models
built by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import helper

import onnxflops
from helpers import FLOAT, INT64, costed, typed_model

SHAPES = "onnxflops.shapes"
S, K, N, E = 12, 8, 16, 4  # routed rows (T·k = 6·2), in width, out width, experts


def grouped(domain="transformers", op="grouped_mm_fallback"):
    """Y = grouped_mm(X S×K, W E×K×N, offs) then Relu: the Relu's shape comes from the grouped
    matmul's shape rule."""
    nodes = [helper.make_node(op, ["x", "w", "offs"], ["y"], domain=domain, name="experts"),
             helper.make_node("Relu", ["y"], ["z"], name="relu")]
    return typed_model(nodes, {"x": (FLOAT, [S, K]), "offs": (INT64, [E])},
                       {"w": np.ones((E, K, N), np.float32)}, domains={domain: 1})


@pytest.mark.parametrize("domain, op", [("transformers", "grouped_mm_fallback"),
                                        ("aten", "_grouped_mm")])
def test_a_grouped_matmul_costs_the_sum_of_its_groups_gemms(domain, op):
    report = costed(grouped(domain, op))
    experts, relu = report.nodes
    assert experts.macs == S * K * N == 1536  # Σ_g n_g·K·N with Σ n_g = S = T·k
    assert experts.params == E * K * N  # every expert's weights, read by the kernel
    assert experts.detail == {"routed": True}
    assert relu.output_shapes == [[S, N]] and relu.flops == S * N
    assert report.routed_macs == 1536
    assert "routed: 1.54 K MACs in 1 products" in report.to_table()


def scaled(recorded: dict | str | None):
    """acme::Scaled (no rule for its shape) with the shapes a converter recorded, then Relu."""
    node = helper.make_node("Scaled", ["x"], ["y"], domain="acme", name="scaled")
    if recorded is not None:
        node.metadata_props.add(key=SHAPES, value=recorded if isinstance(recorded, str)
                                else json.dumps(recorded))
    relu = helper.make_node("Relu", ["y"], ["z"], name="relu")
    return typed_model([node, relu], {"x": (FLOAT, [2, 3])}, domains={"acme": 1})


def _relu(report):
    return next(n for n in report.nodes if n.op_type == "Relu")


def test_recorded_output_shapes_type_a_custom_node_whose_inputs_match():
    report = onnxflops.count(scaled({"inputs": [[2, 3]], "outputs": [[FLOAT, [2, 5]]]}))
    assert _relu(report).flops == 2 * 5  # the recorded 2×5 output, one op per element
    assert [u.op_type for u in report.uncosted] == ["Scaled"]  # typed, but no cost rule


@pytest.mark.parametrize("recorded", [
    {"inputs": [[4, 3]], "outputs": [[FLOAT, [4, 5]]]},  # recorded for other input shapes
    {"inputs": [[2, 3]], "outputs": [[FLOAT, [2, -5]]]},  # a negative dim
    {"inputs": [[2, 3]], "outputs": [[FLOAT, [2, 2 ** 41]]]},  # beyond any tensor
    {"inputs": [[2, 3]], "outputs": [[999, [2, 5]]]},  # no such dtype
    {"inputs": [[2, 3]], "outputs": [[FLOAT, [2, 5]], [FLOAT, [2, 5]]]},  # more outputs than it has
    "{not json", {"outputs": []}])
def test_a_recorded_shape_that_does_not_hold_leaves_the_output_unknown(recorded):
    report = onnxflops.count(scaled(recorded))
    assert {u.op_type for u in report.uncosted} == {"Scaled", "Relu"}
    assert report.total.flops == 0


def experts_by_gather(embedding: bool):
    """Each of T=6 tokens' rows (T×1×K) times a K×N weight: gathered per token from an E×K×N
    table of experts by runtime ids (routed), or a whole K×N weight applied to rows looked up
    in an embedding table (not routed)."""
    if embedding:
        nodes = [helper.make_node("Gather", ["table", "ids"], ["rows"], name="lookup"),
                 helper.make_node("MatMul", ["rows", "w"], ["y"], name="product")]
        constants = {"table": np.ones((E, 1, K), np.float32), "w": np.ones((K, N), np.float32)}
        return typed_model(nodes, {"ids": (INT64, [6])}, constants)
    nodes = [helper.make_node("Gather", ["experts", "ids"], ["chosen"], name="route"),
             helper.make_node("MatMul", ["x", "chosen"], ["y"], name="product")]
    return typed_model(nodes, {"x": (FLOAT, [6, 1, K]), "ids": (INT64, [6])},
                       {"experts": np.ones((E, K, N), np.float32)})


def test_products_of_weights_gathered_per_token_are_labelled_routed():
    report = costed(experts_by_gather(embedding=False))
    product = next(n for n in report.nodes if n.name == "product")
    assert product.macs == 6 * K * N and product.detail == {"routed": True}
    assert report.routed_macs == 6 * K * N == 768


def test_an_embedding_lookup_projected_by_a_weight_is_not_routed():
    report = costed(experts_by_gather(embedding=True))
    assert report.routed_macs == 0
    assert "routed" not in report.to_table()


@pytest.mark.parametrize("x", [-0.999, -0.5, 0.0, 0.3, 0.9, 0.999999])
def test_the_erfinv_translation_inverts_erf(x):
    """erf(erf_inv(x)) = x (math.erf the oracle), in both of Giles' ranges (w = −ln(1 − x²) < 5
    up to |x| ≈ 0.9966, the tail past it), as the ONNX ops it writes run in onnxruntime."""
    pytest.importorskip("onnxscript")
    pytest.importorskip("onnxruntime")
    import math

    from onnxflops.converters.torch_ops import erf_inv

    (y,) = erf_inv(np.array([x], np.float32)).value
    assert math.erf(float(y)) == pytest.approx(x, abs=2e-7)


@pytest.mark.parametrize("values, expected", [([True, True], True), ([True, False], False),
                                              ([], True)])
def test_the_is_all_true_translation_is_all(values, expected):
    """_is_all_true(x) = all(x), True on an empty x, as the ONNX ops it writes run."""
    pytest.importorskip("onnxscript")
    pytest.importorskip("onnxruntime")
    from onnxflops.converters.torch_ops import is_all_true

    assert bool(is_all_true(np.array(values, bool)).value) is expected
