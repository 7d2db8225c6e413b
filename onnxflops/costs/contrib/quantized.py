"""Quantized ops: a QLinear elementwise or pooling op costs its QDQ form (DequantizeLinear of
each quantized input, the float op, QuantizeLinear of the output); integer contractions (QGemm,
DynamicQuantizeMatMul, MatMulIntegerToFloat, QAttention's projection) are integer MACs.
"""

from __future__ import annotations

import math

import numpy as np

from onnxflops.costs.contrib.attention import attention_after_projection
from onnxflops.costs.contrib.common import UINT8, added, attributes, like, ms_rule, nchw, scalar
from onnxflops.costs.node import Node
from onnxflops.costs.quantization import (
    dequantize_linear,
    integer_macs,
    qlinear_conv,
    quantize_linear,
    zero_point_subtractions,
)
from onnxflops.costs.registry import (
    ATTENTION,
    CONTRACTION,
    DATA_MOVEMENT,
    ELEMENTWISE,
    QUANTIZATION,
    ZERO,
    Cost,
)
from onnxflops.graph import TensorInfo


def dequantized(n: Node, slot: int, scale: int, zero_point: int) -> Cost:
    """The standard DequantizeLinear of input `slot`."""
    x = n.input(slot)
    out = like(n.input(scale), x.dims)
    return n.cost_of("DequantizeLinear", [x, n.input(scale), n.input_or_none(zero_point)], [out])


def quantized(n: Node, y: TensorInfo, scale: int, zero_point: int) -> Cost:
    """The standard QuantizeLinear of the float result `y` into the output."""
    return n.cost_of("QuantizeLinear", [y, n.input(scale), n.input_or_none(zero_point)],
                     [TensorInfo("", UINT8, y.dims)])


def float_like(n: Node, scale: int, dims) -> TensorInfo:
    return like(n.input(scale), dims)


@ms_rule(["QLinearAdd", "QLinearMul"], category=ELEMENTWISE)
def qlinear_binary(n: Node) -> Cost:
    """QDQ form: DequantizeLinear of A and B, the standard Add or Mul, QuantizeLinear of C"""
    fa, fb = float_like(n, 1, n.input(0).dims), float_like(n, 4, n.input(3).dims)
    y = float_like(n, 1, np.broadcast_shapes(fa.dims, fb.dims))
    op = n.op_type.removeprefix("QLinear")
    return (dequantized(n, 0, 1, 2) + dequantized(n, 3, 4, 5)
            + n.cost_of(op, [fa, fb], [y]) + quantized(n, y, 6, 7))


@ms_rule(["QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QLinearAveragePool",
          "QLinearGlobalAveragePool", "QLinearReduceMean"], category=QUANTIZATION)
def qlinear_unary(n: Node) -> Cost:
    """QDQ form: DequantizeLinear of X, the standard op, QuantizeLinear of Y"""
    op = n.op_type.removeprefix("QLinear")
    channels_last = n.attr("channels_last", 0)
    x = nchw(float_like(n, 1, n.input(0).dims), channels_last)
    y = x if op in _SAME_SHAPE else nchw(float_like(n, 1, n.output().dims), channels_last)
    attrs = attributes(n, exclude=("channels_last", "opset"))
    axes = [np.array(attrs.pop("axes"), dtype=np.int64)] if "axes" in attrs else []
    return (dequantized(n, 0, 1, 2) + n.cost_of(op, [x, *axes], [y], **attrs)
            + quantized(n, y, 3, 4))


_SAME_SHAPE = ("Sigmoid", "LeakyRelu", "Softmax")


@ms_rule("QLinearConcat", category=DATA_MOVEMENT)
def qlinear_concat(n: Node) -> Cost:
    """QDQ form: DequantizeLinear of each input, QuantizeLinear of Y"""
    y = float_like(n, 0, n.output().dims)
    dq = sum((dequantized(n, i, i + 1, i + 2) for i in range(2, n.num_inputs, 3)), ZERO)
    return dq + quantized(n, y, 0, 1)


@ms_rule("QLinearWhere", category=DATA_MOVEMENT)
def qlinear_where(n: Node) -> Cost:
    """QDQ form: DequantizeLinear of X and Y, QuantizeLinear of Z"""
    z = float_like(n, 7, n.output().dims)
    return dequantized(n, 1, 2, 3) + dequantized(n, 4, 5, 6) + quantized(n, z, 7, 8)


@ms_rule("QLinearConv", category=CONTRACTION, weights=(3, 8))
def ms_qlinear_conv(n: Node) -> Cost:
    """the standard QLinearConv's cost (channels_last changes only the layout)"""
    return qlinear_conv(n)


@ms_rule("QuantizeLinear", category=QUANTIZATION)
def ms_quantize_linear(n: Node) -> Cost:
    """the standard QuantizeLinear's cost"""
    return quantize_linear(n)


@ms_rule("DequantizeLinear", category=QUANTIZATION, weights=(0,))
def ms_dequantize_linear(n: Node) -> Cost:
    """the standard DequantizeLinear's cost"""
    return dequantize_linear(n)


def rescaled(y, scales) -> Cost:
    """int32 accumulators turned into floats: the scales multiplied together (one per element of
    the larger scale), then one multiply per accumulator."""
    return Cost(flops=y + scales)


@ms_rule("QGemm", category=CONTRACTION, weights=(3, 6))
def qgemm(n: Node) -> Cost:
    """int MACs = M·N·K, zero points, int32 C; 4·numel(Y) requantize or numel(Y) rescale; alpha"""
    a = n.input(0).dims
    k = a[0] if n.attr("transA", 0) else a[1]
    y = n.output().numel
    c = Cost(int_ops=y) if n.has_input(6) else ZERO
    alpha = Cost(flops=y) if n.attr("alpha", 1.0) != 1.0 else ZERO
    out = Cost(flops=4 * y) if n.has_input(7) else rescaled(y, n.input(4).numel)
    return integer_macs(y * k) + zero_point_subtractions(n, ((0, 2), (3, 5))) + c + alpha + out


@ms_rule("MatMulIntegerToFloat", category=CONTRACTION, weights=(1, 6))
def matmul_integer_to_float(n: Node) -> Cost:
    """MatMulInteger's cost; a_scale·b_scale, then numel(Y) multiplies by it; +numel(Y) bias"""
    a, b = n.input(0), n.input(1)
    y = math.prod(a.dims[:-1]) * b.dims[-1]
    bias = Cost(flops=y) if n.has_input(6) else ZERO
    scales = max(n.input(2).numel, n.input(3).numel)
    return (integer_macs(y * a.dims[-1]) + zero_point_subtractions(n, ((0, 4), (1, 5)))
            + rescaled(y, scales) + bias)


@ms_rule("DynamicQuantizeMatMul", category=CONTRACTION, weights=(1, 4))
def dynamic_quantize_matmul(n: Node) -> Cost:
    """DynamicQuantizeLinear of A, then as MatMulIntegerToFloat with A's zero point"""
    a, b = n.input(0), n.input(1)
    y = like(a, a.dims[:-1] + b.dims[-1:])
    u8 = TensorInfo("", UINT8, a.dims)
    quantize_a = n.cost_of("DynamicQuantizeLinear", [a], [u8, scalar(a), scalar(u8)])
    bias = Cost(flops=y.numel) if n.has_input(4) else ZERO
    zero_point = Cost(int_ops=a.numel) + zero_point_subtractions(n, ((1, 3),))
    return (quantize_a + integer_macs(y.numel * a.dims[-1]) + zero_point
            + rescaled(y.numel, n.input(2).numel) + bias)


@ms_rule("QAttention", category=ATTENTION, weights=(1, 2))
def qattention(n: Node) -> Cost:
    """int MACs of the QKV projection, zero points, rescale + Add(bias), then as Attention"""
    x, w = n.input(0), n.input(1)
    qkv = like(n.input(3), x.dims[:-1] + w.dims[-1:])
    projection = (integer_macs(qkv.numel * x.dims[-1])
                  + zero_point_subtractions(n, ((0, 6), (1, 7)))
                  + rescaled(qkv.numel, n.input(4).numel)
                  + added(n, qkv, n.input(2)))
    return projection + attention_after_projection(n, like(n.input(3), x.dims), qkv)


@ms_rule("MatMulNBits", category=CONTRACTION, weights=(1, 5),
         packed=lambda attrs: {1: attrs["N"] * attrs["K"]})
def matmul_nbits(n: Node) -> Cost:
    """MACs = numel(Y)·K, +numel(Y) bias: MatMul after DequantizeLinear of the constant B"""
    a = n.input(0)
    k, cols = n.attr("K"), n.attr("N")
    y = math.prod(a.dims[:-1]) * cols
    bias = Cost(flops=y) if n.has_input(5) else ZERO
    if n.attr("accuracy_level", 0) == 4:
        # int8 compute: A is quantized per block (abs-max, divide, round, saturate), and each
        # block's integer sum is scaled and accumulated.
        blocks = -(-k // n.attr("block_size"))
        return integer_macs(y * k) + Cost(flops=4 * a.numel + 2 * y * blocks) + bias
    return Cost(macs=y * k, dot_products=y) + bias


@ms_rule("GatherBlockQuantized", category=QUANTIZATION, weights=(0,))
def gather_block_quantized(n: Node) -> Cost:
    """numel(Y) zero-point subtractions (int) and scalings: the gathered rows dequantized"""
    y = n.output().numel
    return Cost(flops=y, int_ops=y)
