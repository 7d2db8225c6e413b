"""Elementwise arithmetic: one operation per output element per operator application.

Float work is FLOPs; integer and boolean work (index arithmetic, masks) is int_ops.
"""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import ALL_INPUTS, ELEMENTWISE, Cost, rule


def per_element(n: Node, ops_per_element, on_input: int | None = None) -> Cost:
    """`ops_per_element`·numel(Y), as FLOPs when the operands are float, else as int ops."""
    work = ops_per_element * n.output().numel
    operand = n.input(on_input) if on_input is not None else n.output()
    return Cost(flops=work) if operand.is_float else Cost(int_ops=work)


@rule(["Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum"],
      category=ELEMENTWISE, weights=ALL_INPUTS)
def variadic_arithmetic(n: Node) -> Cost:
    """(inputs − 1)·numel(Y): one operation per output element per pair of operands"""
    return per_element(n, n.num_inputs - 1)


@rule("Mean", category=ELEMENTWISE, weights=ALL_INPUTS)
def mean(n: Node) -> Cost:
    """inputs·numel(Y): (inputs − 1) adds and one division per output element"""
    return per_element(n, n.num_inputs)


@rule(["Neg", "Abs", "Reciprocal", "Sqrt", "Floor", "Ceil", "Round", "Sign", "Exp", "Log",
       "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
       "Erf", "IsNaN", "IsInf"], category=ELEMENTWISE)
def unary(n: Node) -> Cost:
    """numel(Y): one operation per element (a transcendental counts as one)"""
    return per_element(n, 1, on_input=0)


@rule(["Equal", "Less", "Greater"],
      category=ELEMENTWISE, weights=ALL_INPUTS)
def comparison(n: Node) -> Cost:
    """numel(Y) comparisons: FLOPs for float operands, int ops otherwise"""
    return per_element(n, 1, on_input=0)


@rule(["And", "Or", "Xor", "Not", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
       "BitwiseNot"], category=ELEMENTWISE)
def logical(n: Node) -> Cost:
    """numel(Y) int ops: boolean and bitwise work is never floating-point"""
    return Cost(int_ops=n.output().numel)
