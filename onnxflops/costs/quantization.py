"""Quantized ops: integer multiply-accumulates are MACs done in integer arithmetic (Cost.int_macs),
the scaling between integer and real values is float work.

Conventions shared by every quantized op:
- a zero point given as an input is subtracted once per element of its operand (an integer op);
- requantizing an integer accumulator costs what QuantizeLinear costs: multiply by the combined
  scale, round, add the zero point, saturate (4 FLOPs per output element).
"""

from __future__ import annotations

import math

from onnxflops.costs.node import Node
from onnxflops.costs.registry import CONTRACTION, QUANTIZATION, Cost, rule

REQUANTIZE_OPS = 4


def zero_point_subtractions(n: Node, operand_and_zero_point: tuple[tuple[int, int], ...]) -> Cost:
    """One integer subtraction per element of each operand whose zero point is an input."""
    work = sum(n.input(x).numel for x, zp in operand_and_zero_point if n.has_input(zp))
    return Cost(int_ops=work)


def integer_macs(macs) -> Cost:
    return Cost(macs=macs, int_macs=macs)


def requantized(n: Node) -> Cost:
    return Cost(flops=REQUANTIZE_OPS * n.output().numel)


@rule("QuantizeLinear", category=QUANTIZATION)
def quantize_linear(n: Node) -> Cost:
    """numel(X)·3: divide by the scale, round, saturate; +numel(X) to add a zero point"""
    return Cost(flops=(3 + n.has_input(2)) * n.input(0).numel)


@rule("DequantizeLinear", category=QUANTIZATION, weights=(0,))
def dequantize_linear(n: Node) -> Cost:
    """numel(X) multiplies by the scale; +numel(X) zero-point subtractions (integer ops)"""
    x = n.input(0)
    subtract = x.numel if n.has_input(2) else 0
    return Cost(flops=x.numel + (subtract if x.is_float else 0),
                int_ops=0 if x.is_float else subtract)


def conv_macs(n: Node, weight: int):
    """Conv's MACs: numel(Y)·(C_in/group)·prod(kernel)."""
    return n.output().numel * math.prod(n.input(weight).dims[1:])


def matmul_macs(n: Node, a: int):
    """MatMul's MACs: numel(Y)·K."""
    return n.output().numel * n.input(a).dims[-1]


@rule("ConvInteger", category=CONTRACTION, weights=(1,))
def conv_integer(n: Node) -> Cost:
    """int MACs = Conv's MACs; +numel(X) and +numel(W) integer ops for zero points given"""
    return integer_macs(conv_macs(n, 1)) + zero_point_subtractions(n, ((0, 2), (1, 3)))


@rule("MatMulInteger", category=CONTRACTION, weights=(1,))
def matmul_integer(n: Node) -> Cost:
    """int MACs = numel(Y)·K; +numel(A) and +numel(B) integer ops for zero points given"""
    return integer_macs(matmul_macs(n, 0)) + zero_point_subtractions(n, ((0, 2), (1, 3)))


@rule("QLinearConv", category=CONTRACTION, weights=(3, 8))
def qlinear_conv(n: Node) -> Cost:
    """int MACs = Conv's; int ops: zero points, numel(X) + numel(W), and bias; requantize 4·numel(Y)"""
    bias = Cost(int_ops=n.output().numel) if n.has_input(8) else Cost()
    return (integer_macs(conv_macs(n, 3)) + zero_point_subtractions(n, ((0, 2), (3, 5)))
            + bias + requantized(n))


@rule("QLinearMatMul", category=CONTRACTION, weights=(3,))
def qlinear_matmul(n: Node) -> Cost:
    """int MACs = numel(Y)·K; zero points numel(A) + numel(B) int ops; requantize 4·numel(Y)"""
    return (integer_macs(matmul_macs(n, 0)) + zero_point_subtractions(n, ((0, 2), (3, 5)))
            + requantized(n))
