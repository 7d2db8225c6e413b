"""Fused contractions: Conv, Gemm and MatMul with the bias add and activation onnxruntime folds
into them, each part costed as its standard op.
"""

from __future__ import annotations

import numpy as np

from onnxflops.costs.contraction import conv, gemm
from onnxflops.costs.contrib.common import added, like, ms_rule, present, scalar
from onnxflops.costs.node import Node
from onnxflops.costs.registry import CONTRACTION, ZERO, Cost
from onnxflops.errors import Uncostable
from onnxflops.graph import TensorInfo


def activation(n: Node, name: str, params: list[float], y: TensorInfo) -> Cost:
    """The standard activation op `name` over Y, its parameters as FusedConv/FusedGemm give them."""
    if not name:
        return ZERO
    attrs, bounds = {}, []
    if name == "Clip":
        bounds = [np.array(p, dtype=np.float32) for p in params[:2]]
    elif name == "LeakyRelu":
        attrs = {"alpha": params[0]} if params else {}
    elif name == "HardSigmoid":
        attrs = dict(zip(("alpha", "beta"), params))
    elif name not in ("Relu", "Sigmoid", "Tanh"):
        raise Uncostable(f"unknown fused activation '{name}'")
    return n.cost_of(name, [y, *bounds], [y], **attrs)


@ms_rule(["FusedConv", "NhwcFusedConv"], category=CONTRACTION, weights=(1, 2))
def fused_conv(n: Node) -> Cost:
    """Conv + Add(Z) when Z is given + the activation, each as its standard op"""
    y = n.output()
    z = added(n, y, *present(n, 3))
    return conv(n) + z + activation(n, n.attr("activation"), n.attr("activation_params", []), y)


@ms_rule("NhwcConv", category=CONTRACTION, weights=(1, 2))
def nhwc_conv(n: Node) -> Cost:
    """Conv's cost: the layout does not change the arithmetic"""
    return conv(n)


@ms_rule("FusedGemm", category=CONTRACTION, weights=(0, 1, 2))
def fused_gemm(n: Node) -> Cost:
    """Gemm + the activation, each as its standard op"""
    params = [n.attr(f"activation_{p}") for p in ("alpha", "beta", "gamma")]
    params = [p for p in params if p is not None]
    return gemm(n) + activation(n, n.attr("activation"), params, n.output())


@ms_rule(["FusedMatMul", "TransposeMatMul"], category=CONTRACTION, weights=(0, 1))
def fused_matmul(n: Node) -> Cost:
    """MatMul over the transposed operands (MACs = numel(Y)·K) + numel(Y) for alpha ≠ 1"""
    a = n.input(0).dims
    if n.attr("transA", 0):
        # transBatchA moves the first dim to just before the last: it is then the one transposed.
        k = a[0] if n.attr("transBatchA", 0) else a[-2]
    else:
        k = a[-1]
    y = n.output()
    scale = n.cost_of("Mul", [y, scalar(y)], [y]) if n.attr("alpha", 1.0) != 1.0 else ZERO
    return Cost(macs=y.numel * k, dot_products=y.numel) + scale


@ms_rule("GemmFastGelu", category=CONTRACTION, weights=(1, 2))
def gemm_fast_gelu(n: Node) -> Cost:
    """MatMul + Add(bias) + tanh-approximated Gelu, each as its standard op"""
    x, w = n.input(0), n.input(1)
    y = like(x, x.dims[:-1] + w.dims[-1:])
    return (n.cost_of("MatMul", [x, w], [y]) + added(n, y, *present(n, 2))
            + n.cost_of("Gelu", [y], [y], approximate="tanh"))
