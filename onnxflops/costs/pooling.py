"""Pooling: comparisons for max, adds and one divide for average, per window."""

from __future__ import annotations

import math

from onnxflops.costs.node import Node
from onnxflops.costs.reduction import extremum_backward, mean_backward
from onnxflops.costs.registry import POOLING, Cost, Grads, backward, rule


@rule("MaxPool", category=POOLING)
def max_pool(n: Node) -> Cost:
    """(prod(kernel) − 1)·numel(Y) comparisons"""
    return Cost(flops=(math.prod(n.attr("kernel_shape")) - 1) * n.output().numel)


@backward("MaxPool")
def max_pool_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y): each dY is added at its window's argmax"""
    return Cost(flops=n.output().numel)


@rule("AveragePool", category=POOLING)
def average_pool(n: Node) -> Cost:
    """prod(kernel)·numel(Y): prod(kernel) − 1 adds and one divide per output"""
    return Cost(flops=math.prod(n.attr("kernel_shape")) * n.output().numel)


@backward("AveragePool")
def average_pool_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y) divides, + prod(kernel)·numel(Y) − numel(X) adds where windows overlap"""
    kernel = n.attr("kernel_shape")
    strides = n.attr("strides") or [1] * len(kernel)
    y = n.output().numel
    overlap = any(s < k for s, k in zip(strides, kernel))
    return Cost(flops=y + (math.prod(kernel) * y - n.input(0).numel if overlap else 0))


@rule("LpPool", category=POOLING)
def lp_pool(n: Node) -> Cost:
    """(3·prod(kernel))·numel(Y): |x|^p and an add per window element, then a root per output"""
    return Cost(flops=3 * math.prod(n.attr("kernel_shape")) * n.output().numel)


@backward("LpPool")
def lp_pool_backward(n: Node, grads: Grads) -> Cost:
    """4·prod(kernel)·numel(Y): dY·(|x|/y)^(p−1)·sign(x) for each window element"""
    return Cost(flops=4 * math.prod(n.attr("kernel_shape")) * n.output().numel)


@rule("GlobalAveragePool", category=POOLING)
def global_average_pool(n: Node) -> Cost:
    """numel(X): (H·W − 1) adds and one divide per (n, c)"""
    return Cost(flops=n.input(0).numel)


backward("GlobalAveragePool")(mean_backward)


@rule("GlobalMaxPool", category=POOLING)
def global_max_pool(n: Node) -> Cost:
    """numel(X) − numel(Y) comparisons"""
    return Cost(flops=n.input(0).numel - n.output().numel)


backward("GlobalMaxPool")(extremum_backward)


@rule("GlobalLpPool", category=POOLING)
def global_lp_pool(n: Node) -> Cost:
    """3·numel(X): |x|^p and an add per element, then a root per (n, c)"""
    return Cost(flops=3 * n.input(0).numel)


@backward("GlobalLpPool")
def global_lp_pool_backward(n: Node, grads: Grads) -> Cost:
    """4·numel(X): dY·(|x|/y)^(p−1)·sign(x) per element"""
    return Cost(flops=4 * n.input(0).numel)
