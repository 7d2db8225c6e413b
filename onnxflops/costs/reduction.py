"""Reductions without a function body: reducing k elements to one takes k − 1 operations."""

from __future__ import annotations

from onnxflops.costs.elementwise import per_element
from onnxflops.costs.node import Node
from onnxflops.costs.registry import REDUCTION, Cost, rule


def reduced(n: Node, extra_per_output: int = 0) -> Cost:
    work = n.input(0).numel - n.output().numel + extra_per_output * n.output().numel
    return Cost(flops=work) if n.input(0).is_float else Cost(int_ops=work)


@rule(["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin"],
      category=REDUCTION)
def reduce(n: Node) -> Cost:
    """numel(X) − numel(Y): k − 1 operations to reduce k elements to one"""
    return reduced(n)


@rule("ReduceMean", category=REDUCTION)
def reduce_mean(n: Node) -> Cost:
    """numel(X): k − 1 adds and one divide per output"""
    return reduced(n, extra_per_output=1)


@rule(["CumSum", "CumProd"], category=REDUCTION)
def cumulative(n: Node) -> Cost:
    """numel(X): one add (or multiply) per element"""
    return per_element(n, 1, on_input=0)
