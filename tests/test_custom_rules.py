"""Rules for custom ops: registered for every later count, or given to one count only.

The custom op com.acme::Scale computes Y = X·w (w a learned vector over X's last axis). Its rule
below prices it at 2·numel(X); with X of shape 2×3×4, that is 48 FLOPs and 4 params. ONNX cannot
infer the output of an op it does not know, so the rules read the input's shape.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper

import onnxflops
from onnxflops.costs import REGISTRY, Cost
from helpers import FLOAT, costed, typed_model

ACME = "com.acme"
X = {"x": (FLOAT, [2, 3, 4])}


def scale(n) -> Cost:
    """2·numel(X): a multiply and an add per element"""
    return Cost(flops=2 * n.input(0).numel)


def scale_backward(n, grads) -> Cost:
    """3·numel(X) for dw (a multiply and a sum over the rows), numel(X) more for dX"""
    return Cost(flops=(3 + (0 in grads)) * n.input(0).numel)


def scale_model():
    node = helper.make_node("Scale", ["x", "w"], ["y"], domain=ACME)
    return typed_model([node], X, {"w": np.ones(4, np.float32)}, domains={ACME: 1})


def gelu_model(domain: str = ""):
    node = helper.make_node("Gelu", ["x"], ["y"], domain=domain)
    return typed_model([node], {"x": (FLOAT, [2, 8])}, opset=20,
                       domains={domain: 1} if domain else None)


@pytest.fixture
def table(monkeypatch):
    """The registry, restored after the test: what a test registers stays in it."""
    monkeypatch.setattr(REGISTRY, "rules", dict(REGISTRY.rules))
    return REGISTRY


def test_a_custom_op_without_a_rule_is_uncosted():
    report = onnxflops.count(scale_model())
    assert [u.reason for u in report.uncosted] == ["no cost rule for com.acme::Scale"]
    assert report.total.flops == 0


def test_a_registered_rule_costs_the_custom_op_and_counts_its_weights(table):
    onnxflops.register_rule(ACME, "Scale", scale, weights=(1,))
    report = costed(scale_model())
    assert report.total.flops == 48
    assert report.total.params == 4
    assert report.nodes[0].category == "other"


def test_a_registered_backward_is_counted_in_training(table):
    onnxflops.register_rule(ACME, "Scale", scale, backward=scale_backward, weights=(1,))
    report = costed(scale_model(), training=True)
    # Only w carries a gradient (x is the model's input): 3·24.
    assert report.total.backward_flops == 72


def test_registering_an_op_that_has_a_rule_needs_replace(table):
    def relu(n) -> Cost:
        """5·numel(Y)"""
        return Cost(flops=5 * n.output().numel)

    with pytest.raises(onnxflops.OnnxFlopsError, match="ai.onnx::Relu has a cost rule already"):
        onnxflops.register_rule("", "Relu", relu)
    onnxflops.register_rule("ai.onnx", "Relu", relu, replace=True)
    report = costed(typed_model([helper.make_node("Relu", ["x"], ["y"])], X))
    assert report.total.flops == 120
    assert report.nodes[0].category == "activation"  # kept from the rule it replaced


def test_a_rule_needs_its_formula(table):
    with pytest.raises(onnxflops.OnnxFlopsError, match="com.acme::Scale: .* has no formula"):
        onnxflops.register_rule(ACME, "Scale", lambda n: Cost())


def test_a_per_call_rule_costs_that_count_only():
    assert costed(scale_model(), rules={(ACME, "Scale"): scale}).total.flops == 48
    assert onnxflops.count(scale_model()).uncosted
    assert REGISTRY.lookup(ACME, "Scale") is None


def test_a_per_call_rule_for_a_standard_op_reprices_what_is_built_from_it():
    def erf(n) -> Cost:
        """10·numel(Y)"""
        return Cost(flops=10 * n.output().numel)

    def gelu(n) -> Cost:
        """7·numel(Y)"""
        return Cost(flops=7 * n.output().numel)

    standard = costed(gelu_model()).total.flops
    # Gelu's function body holds one Erf over its 16 elements: 9 more FLOPs each.
    assert costed(gelu_model(), rules={("", "Erf"): erf}).total.flops == standard + 9 * 16
    assert costed(gelu_model()).total.flops == standard  # the body's cost did not leak
    # com.microsoft's Gelu costs the standard Gelu (Node.cost_of), under the count's rules.
    ms_gelu = gelu_model("com.microsoft")
    assert costed(ms_gelu).total.flops == standard
    assert costed(ms_gelu, rules={("", "Gelu"): gelu}).total.flops == 7 * 16


def test_per_call_rules_take_a_backward_beside_the_forward():
    # x → MatMul(W: 4×4) → h → Scale(h, w): h carries W's gradient back through Scale.
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("Scale", ["h", "w"], ["y"], domain=ACME)]
    model = typed_model(nodes, X, {"W": np.ones((4, 4), np.float32), "w": np.ones(4, np.float32)},
                        outputs=["y"], domains={ACME: 1})
    report = costed(model, training=True, rules={(ACME, "Scale"): (scale, scale_backward)})
    assert report.total.flops == 2 * 24 * 4 + 48
    # MatMul: dW only (x is the model's input), 24·4 MACs; Scale: dh only (w is no weight of a
    # rule given per call without weights), 4·24.
    assert report.total.backward_flops == 2 * 24 * 4 + 4 * 24


@pytest.mark.parametrize("rules, message", [
    ({"Scale": scale}, "rules: key 'Scale' is not a (domain, op_type) pair"),
    ({(ACME, "Scale"): 3}, "the rule given for com.acme::Scale is not a function"),
    ({(ACME, "Scale"): (scale,)}, "maps to a tuple of length 1: give a function, or a (forward, "
                                  "backward) pair"),
])
def test_bad_per_call_rules_are_one_clear_error(rules, message):
    with pytest.raises(onnxflops.OnnxFlopsError, match=re.escape(message)):
        onnxflops.count(scale_model(), rules=rules)


@pytest.mark.parametrize("batch", ["n", 2])
def test_a_custom_ops_output_shape_declared_in_value_info_lets_what_follows_count(batch):
    """Scale's output `s` typed only by the model's value_info (named dim 'n', bound by the input,
    or fixed): the Relu after it counts, 2·3·4 = 24 FLOPs beside Scale's 48."""
    nodes = [helper.make_node("Scale", ["x", "w"], ["s"], domain=ACME),
             helper.make_node("Relu", ["s"], ["y"])]
    m = typed_model(nodes, {"x": (FLOAT, [batch, 3, 4])}, {"w": np.ones(4, np.float32)},
                    domains={ACME: 1})
    m.graph.value_info.append(helper.make_tensor_value_info("s", FLOAT, [batch, 3, 4]))
    report = onnxflops.count(m, inputs={"x": (2, 3, 4)}, rules={(ACME, "Scale"): scale},
                             strict=True)
    assert report.complete and report.total.flops == 48 + 24
