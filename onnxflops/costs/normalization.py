"""Normalization ops without an ONNX function body (LayerNorm & co. are in functions.py)."""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import NORMALIZATION, Cost, rule


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


@rule("LpNormalization", category=NORMALIZATION)
def lp_norm(n: Node) -> Cost:
    """3·numel(X): |x|^p (or x²), sum along the axis, divide; plus a root per slice"""
    x = n.input(0)
    slices = x.numel // x.dims[n.attr("axis", -1)]
    return Cost(flops=3 * x.numel + slices)


@rule("LRN", category=NORMALIZATION)
def lrn(n: Node) -> Cost:
    """(size + 4)·numel(X): square, sum over size neighbours, scale, add bias, pow, divide"""
    return Cost(flops=(n.attr("size") + 4) * n.input(0).numel)
