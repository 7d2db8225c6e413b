"""Activations and bias adds: Gelu's variants, the bias adds fused before them or before Softmax
and Dropout, each as the standard ops it sums.
"""

from __future__ import annotations

from onnxflops.costs.contrib.common import added, like, ms_rule, present
from onnxflops.costs.node import Node
from onnxflops.costs.registry import ACTIVATION, ELEMENTWISE, Cost


@ms_rule("Gelu", category=ACTIVATION)
def gelu(n: Node) -> Cost:
    """the standard Gelu (erf form)"""
    x = n.input(0)
    return n.cost_of("Gelu", [x], [x])


@ms_rule(["FastGelu", "BiasGelu"], category=ACTIVATION, weights=(1,))
def bias_gelu(n: Node) -> Cost:
    """Add(bias) when given + the standard Gelu (tanh form for FastGelu)"""
    x = n.input(0)
    form = {"approximate": "tanh"} if n.op_type == "FastGelu" else {}
    return added(n, x, *present(n, 1)) + n.cost_of("Gelu", [x], [x], **form)


@ms_rule("QuickGelu", category=ACTIVATION)
def quick_gelu(n: Node) -> Cost:
    """the standard Swish, x·sigmoid(alpha·x)"""
    x = n.input(0)
    return n.cost_of("Swish", [x], [x], alpha=n.attr("alpha", 1.702))


@ms_rule("BiasSplitGelu", category=ACTIVATION, weights=(1,))
def bias_split_gelu(n: Node) -> Cost:
    """Add(bias), then left half · Gelu(right half): Add + Gelu + Mul on half of X"""
    x = n.input(0)
    half = like(x, x.dims[:-1] + (x.dims[-1] // 2,))
    return added(n, x, n.input(1)) + n.cost_of("Gelu", [half], [half]) + \
        n.cost_of("Mul", [half, half], [half])


@ms_rule("BiasAdd", category=ELEMENTWISE, weights=(1,))
def bias_add(n: Node) -> Cost:
    """X + bias + skip: two standard Adds"""
    x = n.input(0)
    return added(n, x, n.input(1), n.input(2))


@ms_rule("BiasDropout", category=ELEMENTWISE, weights=(1,))
def bias_dropout(n: Node) -> Cost:
    """Add(bias) + Add(residual) when given; Dropout itself moves data only"""
    x = n.input(0)
    return added(n, x, n.input(1), *present(n, 2))


@ms_rule("BiasSoftmax", category=ACTIVATION, weights=(1,))
def bias_softmax(n: Node) -> Cost:
    """Add(bias) + the standard Softmax over the axis"""
    x = n.input(0)
    return added(n, x, n.input(1)) + n.cost_of("Softmax", [x], [x], axis=n.attr("axis", 1))
