"""onnxruntime's com.microsoft ops: fusions its optimizers write, and quantized operators.

A fused op costs exactly what its unfused standard ops cost: each rule sums the standard rules over
the tensors the fused op computes (Node.cost_of), so FusedConv is Conv + Add + the activation,
SkipLayerNormalization is two Adds + LayerNormalization, Attention is the QKV MatMul + Add + the
ONNX Attention op. A QLinear elementwise or pooling op costs its QDQ form: DequantizeLinear of each
quantized input, the float op, QuantizeLinear of the output. Integer contractions (QGemm,
DynamicQuantizeMatMul, MatMulIntegerToFloat, QAttention's projection) are integer MACs.
"""

from __future__ import annotations

import math

import numpy as np

from onnxflops.costs.contraction import conv, gemm
from onnxflops.costs.node import Node
from onnxflops.costs.pooling import max_pool
from onnxflops.costs.quantization import (
    dequantize_linear,
    integer_macs,
    qlinear_conv,
    quantize_linear,
    zero_point_subtractions,
)
from onnxflops.costs.registry import (
    ACTIVATION,
    ATTENTION,
    CONTRACTION,
    DATA_MOVEMENT,
    ELEMENTWISE,
    NORMALIZATION,
    OTHER,
    POOLING,
    QUANTIZATION,
    ZERO,
    Cost,
    rule,
)
from onnxflops.errors import Uncostable
from onnxflops.graph import TensorInfo

MS = "com.microsoft"
UINT8 = 2


def ms_rule(op_types, **kwargs):
    return rule(op_types, domain=MS, **kwargs)


def like(info: TensorInfo, dims) -> TensorInfo:
    """A tensor of `info`'s dtype with other dims."""
    return TensorInfo("", info.dtype, tuple(dims))


def scalar(info: TensorInfo) -> TensorInfo:
    return like(info, ())


def added(n: Node, x: TensorInfo, *others: TensorInfo) -> Cost:
    """Sum of `x` and `others` broadcast to x's shape: one standard Add per operand."""
    return n.cost_of("Sum", [x, *others], [x]) if others else ZERO


def present(n: Node, *slots: int) -> list[TensorInfo]:
    return [n.input(i) for i in slots if n.has_input(i)]


# --- Fused contractions ------------------------------------------------------------------------

def activation(n: Node, name: str, params: list[float], y: TensorInfo) -> Cost:
    """The standard activation op `name` over Y, its parameters as FusedConv/FusedGemm give them."""
    if not name:
        return ZERO
    attrs, bounds = {}, []
    if name == "Clip":
        bounds = [np.array(p, dtype=np.float32) for p in params[:2]]
    elif name == "LeakyRelu":
        attrs = {"alpha": params[0]} if params else {}
    elif name == "HardSigmoid":
        attrs = dict(zip(("alpha", "beta"), params))
    elif name not in ("Relu", "Sigmoid", "Tanh"):
        raise Uncostable(f"unknown fused activation '{name}'")
    return n.cost_of(name, [y, *bounds], [y], **attrs)


@ms_rule(["FusedConv", "NhwcFusedConv"], category=CONTRACTION, weights=(1, 2))
def fused_conv(n: Node) -> Cost:
    """Conv + Add(Z) when Z is given + the activation, each as its standard op"""
    y = n.output()
    z = added(n, y, *present(n, 3))
    return conv(n) + z + activation(n, n.attr("activation"), n.attr("activation_params", []), y)


@ms_rule("NhwcConv", category=CONTRACTION, weights=(1, 2))
def nhwc_conv(n: Node) -> Cost:
    """Conv's cost: the layout does not change the arithmetic"""
    return conv(n)


@ms_rule("FusedGemm", category=CONTRACTION, weights=(0, 1, 2))
def fused_gemm(n: Node) -> Cost:
    """Gemm + the activation, each as its standard op"""
    params = [n.attr(f"activation_{p}") for p in ("alpha", "beta", "gamma")]
    params = [p for p in params if p is not None]
    return gemm(n) + activation(n, n.attr("activation"), params, n.output())


@ms_rule(["FusedMatMul", "TransposeMatMul"], category=CONTRACTION, weights=(0, 1))
def fused_matmul(n: Node) -> Cost:
    """MatMul over the transposed operands (MACs = numel(Y)·K) + numel(Y) for alpha ≠ 1"""
    a = n.input(0).dims
    if n.attr("transA", 0):
        # transBatchA moves the first dim to just before the last: it is then the one transposed.
        k = a[0] if n.attr("transBatchA", 0) else a[-2]
    else:
        k = a[-1]
    y = n.output()
    scale = n.cost_of("Mul", [y, scalar(y)], [y]) if n.attr("alpha", 1.0) != 1.0 else ZERO
    return Cost(macs=y.numel * k, dot_products=y.numel) + scale


@ms_rule("GemmFastGelu", category=CONTRACTION, weights=(1, 2))
def gemm_fast_gelu(n: Node) -> Cost:
    """MatMul + Add(bias) + tanh-approximated Gelu, each as its standard op"""
    x, w = n.input(0), n.input(1)
    y = like(x, x.dims[:-1] + w.dims[-1:])
    return (n.cost_of("MatMul", [x, w], [y]) + added(n, y, *present(n, 2))
            + n.cost_of("Gelu", [y], [y], approximate="tanh"))


# --- Activations and bias adds -----------------------------------------------------------------

@ms_rule("Gelu", category=ACTIVATION)
def gelu(n: Node) -> Cost:
    """the standard Gelu (erf form)"""
    x = n.input(0)
    return n.cost_of("Gelu", [x], [x])


@ms_rule(["FastGelu", "BiasGelu"], category=ACTIVATION, weights=(1,))
def bias_gelu(n: Node) -> Cost:
    """Add(bias) when given + the standard Gelu (tanh form for FastGelu)"""
    x = n.input(0)
    form = {"approximate": "tanh"} if n.op_type == "FastGelu" else {}
    return added(n, x, *present(n, 1)) + n.cost_of("Gelu", [x], [x], **form)


@ms_rule("QuickGelu", category=ACTIVATION)
def quick_gelu(n: Node) -> Cost:
    """the standard Swish, x·sigmoid(alpha·x)"""
    x = n.input(0)
    return n.cost_of("Swish", [x], [x], alpha=n.attr("alpha", 1.702))


@ms_rule("BiasSplitGelu", category=ACTIVATION, weights=(1,))
def bias_split_gelu(n: Node) -> Cost:
    """Add(bias), then left half · Gelu(right half): Add + Gelu + Mul on half of X"""
    x = n.input(0)
    half = like(x, x.dims[:-1] + (x.dims[-1] // 2,))
    return added(n, x, n.input(1)) + n.cost_of("Gelu", [half], [half]) + \
        n.cost_of("Mul", [half, half], [half])


@ms_rule("BiasAdd", category=ELEMENTWISE, weights=(1,))
def bias_add(n: Node) -> Cost:
    """X + bias + skip: two standard Adds"""
    x = n.input(0)
    return added(n, x, n.input(1), n.input(2))


@ms_rule("BiasDropout", category=ELEMENTWISE, weights=(1,))
def bias_dropout(n: Node) -> Cost:
    """Add(bias) + Add(residual) when given; Dropout itself moves data only"""
    x = n.input(0)
    return added(n, x, n.input(1), *present(n, 2))


@ms_rule("BiasSoftmax", category=ACTIVATION, weights=(1,))
def bias_softmax(n: Node) -> Cost:
    """Add(bias) + the standard Softmax over the axis"""
    x = n.input(0)
    return added(n, x, n.input(1)) + n.cost_of("Softmax", [x], [x], axis=n.attr("axis", 1))


# --- Normalization -----------------------------------------------------------------------------

def skip_sum(n: Node, bias_slot: int) -> tuple[TensorInfo, Cost]:
    """input + skip (+ bias): the residual sum the Skip* normalizations normalize."""
    x = n.input(0)
    return x, added(n, x, n.input(1), *present(n, bias_slot))


@ms_rule("SkipLayerNormalization", category=NORMALIZATION, weights=(2, 3, 4))
def skip_layer_norm(n: Node) -> Cost:
    """input + skip (+ bias) as standard Adds, then the standard LayerNormalization"""
    x, residual = skip_sum(n, 4)
    return residual + n.cost_of("LayerNormalization", [x, n.input(2), *present(n, 3)], [x])


@ms_rule("SkipSimplifiedLayerNormalization", category=NORMALIZATION, weights=(2, 3))
def skip_simplified_layer_norm(n: Node) -> Cost:
    """input + skip (+ bias) as standard Adds, then the standard RMSNormalization"""
    x, residual = skip_sum(n, 3)
    return residual + n.cost_of("RMSNormalization", [x, n.input(2)], [x])


@rule("SimplifiedLayerNormalization", category=NORMALIZATION, weights=(1,))
@ms_rule("SimplifiedLayerNormalization", category=NORMALIZATION, weights=(1,))
def simplified_layer_norm(n: Node) -> Cost:
    """the standard RMSNormalization (onnxruntime's name for it)"""
    x = n.input(0)
    return n.cost_of("RMSNormalization", [x, n.input(1)], [x], axis=n.attr("axis", -1))


@ms_rule("LayerNormalization", category=NORMALIZATION, weights=(1, 2))
def layer_norm(n: Node) -> Cost:
    """the standard LayerNormalization"""
    x = n.input(0)
    return n.cost_of("LayerNormalization", [x, *present(n, 1, 2)], [x], axis=n.attr("axis", -1))


@ms_rule("EmbedLayerNormalization", category=NORMALIZATION, weights=(2, 3, 4, 5, 6))
def embed_layer_norm(n: Node) -> Cost:
    """word + position (+ segment) embeddings as standard Adds, then LayerNormalization"""
    ids, word = n.input(0), n.input(2)
    x = like(word, ids.dims + word.dims[-1:])
    embeddings = [x, x] + ([x] if n.has_input(4) else [])
    return n.cost_of("Sum", embeddings, [x]) + \
        n.cost_of("LayerNormalization", [x, n.input(5), n.input(6)], [x])


def nchw(x: TensorInfo, channels_last: bool) -> TensorInfo:
    return like(x, (x.dims[0], x.dims[-1], *x.dims[1:-1])) if channels_last else x


@ms_rule(["GroupNorm", "SkipGroupNorm"], category=NORMALIZATION, weights=(1, 2, 4))
def group_norm(n: Node) -> Cost:
    """(skip, bias Adds) + the standard GroupNormalization (+ Sigmoid, Mul when activation = 1)"""
    x = nchw(n.input(0), n.attr("channels_last", 1))
    gamma = n.input(1)
    residual = added(n, x, n.input(3), *present(n, 4)) if n.op_type == "SkipGroupNorm" else ZERO
    norm = n.cost_of("GroupNormalization", [x, gamma, n.input(2)], [x],
                     num_groups=n.attr("groups"))
    silu = n.cost_of("Sigmoid", [x], [x]) + n.cost_of("Mul", [x, x], [x]) \
        if n.attr("activation", 0) else ZERO
    return residual + norm + silu


# --- Attention ---------------------------------------------------------------------------------

def attention_core(n: Node, q: TensorInfo, k: TensorInfo, v: TensorInfo, causal: bool,
                   bias: TensorInfo | None = None, **attrs) -> Cost:
    """The standard Attention op on 4-D q [B, Hq, S, h], k [B, Hkv, L, h], v [B, Hkv, L, hv]."""
    scale = n.attr("scale")
    if scale:
        attrs["scale"] = scale
    y = like(q, q.dims[:3] + v.dims[3:])
    return n.cost_of("Attention", [q, k, v, bias], [y], is_causal=int(causal), **attrs)


def heads(x: TensorInfo, count, length=None) -> TensorInfo:
    """[B, S, H·h] viewed as [B, H, S, h] (with S replaced by `length` if given)."""
    batch, seq, hidden = x.dims
    return like(x, (batch, count, seq if length is None else length, hidden // count))


def rotary(n: Node, x: TensorInfo, max_positions) -> Cost:
    """The standard RotaryEmbedding on 4-D x [B, H, S, h], caches for `max_positions` positions."""
    batch, _, seq, head = x.dims
    dim = n.attr("rotary_embedding_dim", 0) or head
    cache = like(x, (max_positions, dim // 2))
    positions = TensorInfo("", 7, (batch, seq))
    return n.cost_of("RotaryEmbedding", [x, cache, cache, positions], [x],
                     rotary_embedding_dim=dim, interleaved=n.attr("rotary_interleaved", 0))


@ms_rule("Attention", category=ATTENTION, weights=(1, 2))
def ms_attention(n: Node) -> Cost:
    """MatMul + Add (the QKV projection), then the standard Attention (+ RoPE on q, k)"""
    x, w = n.input(0), n.input(1)
    qkv = like(x, x.dims[:-1] + w.dims[-1:])
    projection = n.cost_of("MatMul", [x, w], [qkv]) + added(n, qkv, *present(n, 2))
    return projection + _ms_attention_core(n, x, qkv)


def _ms_attention_core(n: Node, x: TensorInfo, qkv: TensorInfo) -> Cost:
    """Attention and QAttention after the projection: past (2, B, H, P, h) joins K and V."""
    count = n.attr("num_heads")
    sizes = n.attr("qkv_hidden_sizes") or [qkv.dims[-1] // 3] * 3
    batch, seq = x.dims[:2]
    past = n.input(4).dims[3] if n.op_type == "Attention" and n.has_input(4) else (
        n.input(8).dims[3] if n.op_type == "QAttention" and n.has_input(8) else 0)
    q = like(x, (batch, count, seq, sizes[0] // count))
    k = like(x, (batch, count, past + seq, sizes[1] // count))
    v = like(x, (batch, count, past + seq, sizes[2] // count))
    bias = n.input(5) if n.op_type == "Attention" and n.has_input(5) else None
    roped = rotary(n, q, past + seq) + rotary(n, like(q, k.dims[:2] + (seq,) + k.dims[3:]),
                                                 past + seq) if n.attr("do_rotary", 0) else ZERO
    return roped + attention_core(n, q, k, v, n.attr("unidirectional", 0), bias)


@ms_rule("MultiHeadAttention", category=ATTENTION, weights=(3,))
def multi_head_attention(n: Node) -> Cost:
    """Add(bias) on Q, K, V when given, then the standard Attention op per head"""
    count = n.attr("num_heads")
    query = n.input(0)
    if not n.has_input(1):  # packed QKV [B, S, H, 3, h]
        batch, seq, _, _, head = query.dims
        q = k = v = like(query, (batch, count, seq, head))
        projected = [like(query, (batch, seq, 3 * count * head))]
    elif n.input(1).rank == 5:  # packed KV [B, L, H, 2, h]
        q = heads(query, count)
        batch, length, _, _, head = n.input(1).dims
        k = v = like(query, (batch, count, length, head))
        projected = [query, like(query, (batch, length, 2 * count * head))]
    elif n.input(1).rank == 4:  # K and V already split into heads: no bias on them
        q, k, v = heads(query, count), n.input(1), n.input(2)
        projected = [query]
    else:
        q, k, v = heads(query, count), heads(n.input(1), count), heads(n.input(2), count)
        projected = [query, n.input(1), n.input(2)]
    bias = sum((added(n, t, scalar(t)) for t in projected), ZERO) if n.has_input(3) else ZERO
    if n.has_input(6):  # past key [B, H, P, h] precedes the new keys
        past = n.input(6).dims[2]
        k = like(k, k.dims[:2] + (past + k.dims[2],) + k.dims[3:])
        v = like(v, v.dims[:2] + (past + v.dims[2],) + v.dims[3:])
    mask = n.input(5) if n.has_input(5) else None
    return bias + attention_core(n, q, k, v, n.attr("unidirectional", 0), mask)


@ms_rule("GroupQueryAttention", category=ATTENTION)
def group_query_attention(n: Node) -> Cost:
    """RoPE on q and new k when do_rotary, then the standard Attention with Hq and Hkv heads"""
    hq, hkv = n.attr("num_heads"), n.attr("kv_num_heads")
    query = n.input(0)
    batch, seq, hidden = query.dims
    head = hidden // (hq if n.has_input(1) else hq + 2 * hkv)
    q = like(query, (batch, hq, seq, head))
    new_k = like(query, (batch, hkv, seq, head))
    length = _total_length(n, seq)
    k = v = like(query, (batch, hkv, length, head))
    roped = rotary(n, q, length) + rotary(n, new_k, length) if n.attr("do_rotary", 0) else ZERO
    mask = n.input(10) if n.has_input(10) else None
    softcap = {"softcap": n.attr("softcap")} if n.attr("softcap") else {}
    return roped + attention_core(n, q, k, v, n.attr("causal", 1), mask, **softcap)


def _total_length(n: Node, seq):
    """Keys attended: total_sequence_length when known, else the present cache's length."""
    total = n.value(6)
    if total is not None:
        return int(total.reshape(-1)[0])
    if n.num_outputs > 1 and n.proto.output[1] and n.output(1).known:
        return n.output(1).dims[2]
    return n.input(3).dims[2] + seq if n.has_input(3) else seq


@ms_rule("RotaryEmbedding", category=ATTENTION)
def ms_rotary_embedding(n: Node) -> Cost:
    """the standard RotaryEmbedding (inputs reordered: X, cos, sin, position_ids)"""
    x, cos = n.input(0), n.input(2)
    count = n.attr("num_heads", 0) or (x.dims[-1] // (2 * cos.dims[-1]) if x.rank == 3 else 0)
    positions = TensorInfo("", 7, x.dims[:1] + x.dims[-2:-1])
    attrs = {"num_heads": count} if x.rank == 3 else {}
    dim = n.attr("rotary_embedding_dim", 0)
    if dim:
        attrs["rotary_embedding_dim"] = dim
    return n.cost_of("RotaryEmbedding", [x, cos, n.input(3), positions], [x],
                     interleaved=n.attr("interleaved", 0), **attrs)


# --- Quantized ---------------------------------------------------------------------------------

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


def attributes(n: Node, exclude=()) -> dict:
    return {a.name: n.attr(a.name) for a in n.proto.attribute if a.name not in exclude}


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
    return projection + _ms_attention_core(n, like(n.input(3), x.dims), qkv)


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


@ms_rule("NhwcMaxPool", category=POOLING)
def nhwc_max_pool(n: Node) -> Cost:
    """MaxPool's cost: the layout does not change the arithmetic"""
    return max_pool(n)


@ms_rule("Inverse", category=OTHER)
def inverse(n: Node) -> Cost:
    """2·M³ per M×M matrix: Gauss-Jordan elimination (LU, then M triangular solves)"""
    x = n.input(0).dims
    m = x[-1]
    return Cost(flops=math.prod(x[:-2]) * 2 * m * m * m)


@ms_rule(["ComplexMul", "ComplexMulConj"], category=ELEMENTWISE)
def complex_mul(n: Node) -> Cost:
    """3·numel(Y): per complex value (2 floats) 4 multiplies and 2 adds"""
    return Cost(flops=3 * n.output().numel)


@ms_rule(["ExpandDims", "Trilu", "Pad", "GatherND", "Range", "Unique"], category=DATA_MOVEMENT)
def ms_standard_twin(n: Node) -> Cost:
    """the standard op's cost (ExpandDims is Unsqueeze)"""
    return n.cost_of(n.op_type if n.op_type != "ExpandDims" else "Unsqueeze",
                     [n.input_or_none(i) for i in range(n.num_inputs)], n.outputs(),
                     **attributes(n))
