"""Attention: onnxruntime's attention ops as the standard Attention op on their q, k, v (and
RotaryEmbedding where they rotate), after their projection or bias adds.
"""

from __future__ import annotations

from onnxflops.costs.contrib.common import added, like, ms_rule, present, scalar
from onnxflops.costs.node import Node
from onnxflops.costs.registry import ATTENTION, ZERO, Cost
from onnxflops.graph import TensorInfo


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
    return projection + attention_after_projection(n, x, qkv)


def attention_after_projection(n: Node, x: TensorInfo, qkv: TensorInfo) -> Cost:
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
