"""Normalization ops without an ONNX function body (LayerNorm & co. are in functions.py)."""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import NORMALIZATION, Cost, Grads, backward, rule


@rule("BatchNormalization", category=NORMALIZATION, weights=(1, 2), buffers=(3, 4))
def batch_norm(n: Node) -> Cost:
    """4·numel(X) + 2·C: (x − mean) / sqrt(var + eps) · scale + B, with var + eps and sqrt per channel"""
    x = n.input(0)
    channels = x.dims[1] if x.rank > 1 else 1
    return Cost(flops=4 * x.numel + 2 * channels)


@rule("InstanceNormalization", category=NORMALIZATION, weights=(1, 2))
def instance_norm(n: Node) -> Cost:
    """7·numel(X) + 5·N·C: LayerNormalization's expansion over each (n, c) slice"""
    x = n.input(0)
    return Cost(flops=7 * x.numel + 5 * x.dims[0] * x.dims[1])


@backward(["BatchNormalization", "InstanceNormalization"])
def batch_norm_backward(n: Node, grads: Grads) -> Cost:
    """5·numel(X) for x̂, Σ dY, Σ dY·x̂ (training statistics); +4·numel(X) for dX = γ/σ·(dY − …)"""
    # dX = γ/σ·(dY − mean(dY) − x̂·mean(dY·x̂)); dγ = Σ dY·x̂; dβ = Σ dY.
    x = n.input(0).numel
    return Cost(flops=5 * x + (4 * x if 0 in grads else 0))


@rule("LpNormalization", category=NORMALIZATION)
def lp_norm(n: Node) -> Cost:
    """3·numel(X): |x|^p (or x²), sum along the axis, divide; plus a root per slice"""
    x = n.input(0)
    slices = x.numel // x.dims[n.attr("axis", -1)]
    return Cost(flops=3 * x.numel + slices)


@backward("LpNormalization")
def lp_norm_backward(n: Node, grads: Grads) -> Cost:
    """5·numel(X): s = Σ dY·Y along the axis, dX = (dY − Y·s)/‖x‖"""
    return Cost(flops=5 * n.input(0).numel)


@rule("LRN", category=NORMALIZATION)
def lrn(n: Node) -> Cost:
    """(size + 4)·numel(X): square, sum over size neighbours, scale, add bias, pow, divide"""
    return Cost(flops=(n.attr("size") + 4) * n.input(0).numel)


@backward("LRN")
def lrn_backward(n: Node, grads: Grads) -> Cost:
    """(size + 7)·numel(X): dX = dY·s^−β − (2αβ/size)·X·Σ_window(dY·Y/s), s the forward's scale"""
    return Cost(flops=(n.attr("size") + 7) * n.input(0).numel)
