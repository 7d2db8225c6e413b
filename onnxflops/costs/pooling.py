"""Pooling: comparisons for max, adds and one divide for average, per window."""

from __future__ import annotations

import math

from onnxflops.costs.node import Node
from onnxflops.costs.registry import POOLING, Cost, rule


@rule("MaxPool", category=POOLING)
def max_pool(n: Node) -> Cost:
    """(prod(kernel) − 1)·numel(Y) comparisons"""
    return Cost(flops=(math.prod(n.attr("kernel_shape")) - 1) * n.output().numel)


@rule("AveragePool", category=POOLING)
def average_pool(n: Node) -> Cost:
    """prod(kernel)·numel(Y): prod(kernel) − 1 adds and one divide per output"""
    return Cost(flops=math.prod(n.attr("kernel_shape")) * n.output().numel)


@rule("LpPool", category=POOLING)
def lp_pool(n: Node) -> Cost:
    """(3·prod(kernel))·numel(Y): |x|^p and an add per window element, then a root per output"""
    return Cost(flops=3 * math.prod(n.attr("kernel_shape")) * n.output().numel)


@rule("GlobalAveragePool", category=POOLING)
def global_average_pool(n: Node) -> Cost:
    """numel(X): (H·W − 1) adds and one divide per (n, c)"""
    return Cost(flops=n.input(0).numel)


@rule("GlobalMaxPool", category=POOLING)
def global_max_pool(n: Node) -> Cost:
    """numel(X) − numel(Y) comparisons"""
    return Cost(flops=n.input(0).numel - n.output().numel)


@rule("GlobalLpPool", category=POOLING)
def global_lp_pool(n: Node) -> Cost:
    """3·numel(X): |x|^p and an add per element, then a root per (n, c)"""
    return Cost(flops=3 * n.input(0).numel)
