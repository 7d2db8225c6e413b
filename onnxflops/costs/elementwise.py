"""Elementwise arithmetic: one operation per output element per operator application.

Float work is FLOPs; integer and boolean work (index arithmetic, masks) is int_ops. A backward
counts the arithmetic of its gradient formula, plus the adds that sum dY over an operand's
broadcast dims.
"""

from __future__ import annotations

from typing import Callable

from onnxflops.costs.node import Node
from onnxflops.costs.registry import ALL_INPUTS, ELEMENTWISE, ZERO, Cost, Grads, backward, rule

ZERO_ALMOST_EVERYWHERE = "0: the gradient is zero almost everywhere"
NO_GRADIENT = "0: a boolean output carries no gradient"


def per_element(n: Node, ops_per_element, on_input: int | None = None) -> Cost:
    """`ops_per_element`·numel(Y), as FLOPs when the operands are float, else as int ops."""
    work = ops_per_element * n.output().numel
    operand = n.input(on_input) if on_input is not None else n.output()
    return Cost(flops=work) if operand.is_float else Cost(int_ops=work)


def per_element_backward(n: Node, grads: Grads, per_operand: int) -> Cost:
    """`per_operand`·numel(Y) for each operand needing a gradient, plus its broadcast sum."""
    work = sum(per_operand * n.output().numel + n.output().numel - n.input(s).numel for s in grads)
    return Cost(flops=work)


@rule(["Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum"],
      category=ELEMENTWISE, weights=ALL_INPUTS)
def variadic_arithmetic(n: Node) -> Cost:
    """(inputs − 1)·numel(Y): one operation per output element per pair of operands"""
    return per_element(n, n.num_inputs - 1)


@backward(["Add", "Sum"])
def add_backward(n: Node, grads: Grads) -> Cost:
    """dXi = dY: numel(Y) − numel(Xi) adds to sum dY over each operand's broadcast dims"""
    return per_element_backward(n, grads, 0)


@backward("Sub")
def sub_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY, dB = −dY: numel(Y) negations for dB, plus the broadcast sums"""
    return per_element_backward(n, grads, 0) + (per_element(n, 1) if 1 in grads else ZERO)


def one_op_per_operand(n: Node, grads: Grads) -> Cost:
    return per_element_backward(n, grads, 1)


backward("Mul", formula="dA = dY·B, dB = dY·A: numel(Y) each, plus the broadcast sums")(
    one_op_per_operand)
backward(["Max", "Min"], formula="numel(Y) comparisons per operand to route dY to it, plus the "
                                 "broadcast sums")(one_op_per_operand)


@backward("Div")
def div_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY/B: numel(Y); dB = −dY·Y/B: 3·numel(Y); plus the broadcast sums"""
    per_slot = {0: 1, 1: 3}
    return per_element_backward(n, grads, 0) + per_element(n, sum(per_slot[s] for s in grads))


@backward("Pow")
def pow_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY·B·A^(B−1): 4·numel(Y); dB = dY·Y·ln A: 3·numel(Y); plus the broadcast sums"""
    per_slot = {0: 4, 1: 3}
    return per_element_backward(n, grads, 0) + per_element(n, sum(per_slot[s] for s in grads))


@backward("Mod")
def mod_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY; dB = −dY·floor(A/B): 3·numel(Y); plus the broadcast sums"""
    return per_element_backward(n, grads, 0) + (per_element(n, 3) if 1 in grads else ZERO)


@rule("Mean", category=ELEMENTWISE, weights=ALL_INPUTS)
def mean(n: Node) -> Cost:
    """inputs·numel(Y): (inputs − 1) adds and one division per output element"""
    return per_element(n, n.num_inputs)


backward("Mean", formula="dXi = dY/n: numel(Y) per operand, plus the broadcast sums")(
    one_op_per_operand)


@rule(["Neg", "Abs", "Reciprocal", "Sqrt", "Floor", "Ceil", "Round", "Sign", "Exp", "Log",
       "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
       "Erf", "IsNaN", "IsInf"], category=ELEMENTWISE)
def unary(n: Node) -> Cost:
    """numel(Y): one operation per element (a transcendental counts as one)"""
    return per_element(n, 1, on_input=0)


def unary_backward(ops_per_element: int) -> Callable[[Node, Grads], Cost]:
    """The backward of a one-input op whose dX takes `ops_per_element` operations per element."""
    def backward_fn(n: Node, grads: Grads) -> Cost:
        return Cost(flops=ops_per_element * n.output().numel)
    return backward_fn


def pointwise_gradient(op_type: str, ops_per_element: int, gradient: str) -> None:
    """Register the backward of `op_type`, whose dX is `gradient`: `ops_per_element` per element."""
    times = "" if ops_per_element == 1 else f"{ops_per_element}·"
    backward(op_type, formula=f"{times}numel(X): dX = {gradient}")(unary_backward(ops_per_element))


backward(["Floor", "Ceil", "Round", "Sign"], formula=ZERO_ALMOST_EVERYWHERE)(unary_backward(0))
backward(["IsNaN", "IsInf"], formula=NO_GRADIENT)(unary_backward(0))
for _op, _ops_per_element, _gradient in (
    ("Neg", 1, "−dY"), ("Exp", 1, "dY·Y"), ("Log", 1, "dY/X"),
    ("Abs", 2, "dY·sign(X)"), ("Sqrt", 2, "dY/(2·Y)"), ("Sin", 2, "dY·cos(X)"),
    ("Sinh", 2, "dY·cosh(X)"), ("Cosh", 2, "dY·sinh(X)"),
    ("Reciprocal", 3, "−dY·Y²"), ("Cos", 3, "−dY·sin(X)"), ("Tan", 3, "dY·(1 + Y²)"),
    ("Atan", 3, "dY/(1 + X²)"), ("Atanh", 3, "dY/(1 − X²)"),
    ("Asin", 4, "dY/√(1 − X²)"), ("Asinh", 4, "dY/√(X² + 1)"), ("Acosh", 4, "dY/√(X² − 1)"),
    ("Erf", 4, "dY·(2/√π)·exp(−X²)"), ("Acos", 5, "−dY/√(1 − X²)"),
):
    pointwise_gradient(_op, _ops_per_element, _gradient)


@rule(["Equal", "Less", "Greater"],
      category=ELEMENTWISE, weights=ALL_INPUTS)
def comparison(n: Node) -> Cost:
    """numel(Y) comparisons: FLOPs for float operands, int ops otherwise"""
    return per_element(n, 1, on_input=0)


# Clip's and Relu's function bodies compare before they select (Where).
backward(["Less", "Greater", "Equal"], formula=NO_GRADIENT)(unary_backward(0))


@rule(["And", "Or", "Xor", "Not", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
       "BitwiseNot"], category=ELEMENTWISE)
def logical(n: Node) -> Cost:
    """numel(Y) int ops: boolean and bitwise work is never floating-point"""
    return Cost(int_ops=n.output().numel)


backward(["Not", "And", "Or", "Xor"], formula=NO_GRADIENT)(unary_backward(0))
