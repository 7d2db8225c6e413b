"""Reductions without a function body: reducing k elements to one takes k − 1 operations."""

from __future__ import annotations

from onnxflops.costs.elementwise import per_element
from onnxflops.costs.node import Node
from onnxflops.costs.registry import REDUCTION, ZERO, Cost, Grads, backward, rule


def reduced(n: Node, extra_per_output: int = 0) -> Cost:
    elements, outputs = n.input(0).numel, n.output().numel
    # an empty set reduces to the identity (0 for a sum), written without arithmetic
    work = (elements - outputs if elements != 0 else 0) + extra_per_output * outputs
    return Cost(flops=work) if n.input(0).is_float else Cost(int_ops=work)


@rule(["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin"],
      category=REDUCTION)
def reduce(n: Node) -> Cost:
    """numel(X) − numel(Y): k − 1 operations to reduce k elements to one (none from an empty X)"""
    return reduced(n)


@backward("ReduceSum")
def sum_backward(n: Node, grads: Grads) -> Cost:
    """0: dY broadcast back over the reduced elements (a copy)"""
    return ZERO


@backward(["ReduceMax", "ReduceMin"])
def extremum_backward(n: Node, grads: Grads) -> Cost:
    """numel(X) comparisons: dY goes where the input equals the extremum"""
    return Cost(flops=n.input(0).numel)


@backward("ReduceProd")
def prod_backward(n: Node, grads: Grads) -> Cost:
    """2·numel(X): dX = dY·Y/X"""
    return Cost(flops=2 * n.input(0).numel)


@rule("ReduceMean", category=REDUCTION)
def reduce_mean(n: Node) -> Cost:
    """numel(X): k − 1 adds and one divide per output"""
    return reduced(n, extra_per_output=1)


@backward("ReduceMean")
def mean_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y): dY/k per output, broadcast back over the k reduced elements (a copy)"""
    return Cost(flops=n.output().numel)


@rule(["CumSum", "CumProd"], category=REDUCTION)
def cumulative(n: Node) -> Cost:
    """numel(X): one add (or multiply) per element"""
    return per_element(n, 1, on_input=0)


@backward("CumSum")
def cumsum_backward(n: Node, grads: Grads) -> Cost:
    """numel(X): dX is the reverse cumulative sum of dY"""
    return Cost(flops=n.input(0).numel)


@backward("CumProd")
def cumprod_backward(n: Node, grads: Grads) -> Cost:
    """3·numel(X): dX = reverse-cumsum(dY·Y)/X"""
    return Cost(flops=3 * n.input(0).numel)
