"""Selection along an axis: top-k, unique, hardmax. Comparisons are FLOPs on float data, integer
ops otherwise; a sort or heap of n items costs ⌈log2 n⌉ comparisons per item.
"""

from __future__ import annotations

import math

import numpy as np

from onnxflops.costs.data_movement import view_backward
from onnxflops.costs.elementwise import ZERO_ALMOST_EVERYWHERE, unary_backward
from onnxflops.costs.node import Node
from onnxflops.costs.registry import REDUCTION, Cost, backward, rule


def comparisons(n: Node, work) -> Cost:
    return Cost(flops=work) if n.input(0).is_float else Cost(int_ops=work)


def log2_ceil(count) -> int:
    """⌈log2 count⌉ (count ≥ 1): an int's bit length, or a formula of a symbolic count (a
    top-k's k of min(prompt, 2048) selected keys)."""
    if isinstance(count, (int, np.integer)):
        return (int(count) - 1).bit_length()
    import sympy

    return sympy.ceiling(sympy.log(count, 2))


@rule("TopK", category=REDUCTION)
def top_k(n: Node) -> Cost:
    """numel(X)·⌈log2(k + 1)⌉ comparisons: each element offered to a size-k heap"""
    axis = n.attr("axis", -1)
    k = n.output().dims[axis]  # k: an attribute before opset 10, an input since
    return comparisons(n, n.input(0).numel * log2_ceil(k + 1))


backward("TopK")(view_backward)


@rule("Unique", category=REDUCTION)
def unique(n: Node) -> Cost:
    """numel(X)·⌈log2 n⌉ comparisons: sorting the n items (elements, or slices on the axis)"""
    x = n.input(0)
    axis = n.attr("axis")
    items = x.numel if axis is None else x.dims[axis]
    return comparisons(n, x.numel * log2_ceil(items))


@rule("Hardmax", category=REDUCTION)
def hardmax(n: Node) -> Cost:
    """numel(X) − slices comparisons: an argmax per slice (before opset 13, X flattened at axis)"""
    x = n.input(0)
    axis = n.attr("axis", -1 if n.opset >= 13 else 1) % x.rank
    kept = x.dims[:axis] if n.opset < 13 else x.dims[:axis] + x.dims[axis + 1:]
    return comparisons(n, x.numel - math.prod(kept))


backward("Hardmax", formula=ZERO_ALMOST_EVERYWHERE)(unary_backward(0))
