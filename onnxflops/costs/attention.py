"""Attention of ONNX's preview domain: FlexAttention, scaled dot-product attention with
modifier subgraphs on its scores and probabilities (ai.onnx.preview)."""

from __future__ import annotations

import onnx

from onnxflops.costs.node import Node
from onnxflops.costs.registry import ATTENTION, Cost, Grads, backward, rule
from onnxflops.errors import Uncostable
from onnxflops.graph import TensorInfo

PREVIEW = "ai.onnx.preview"
_MODIFIERS = ("score_mod", "prob_mod")


def _scores(n: Node) -> TensorInfo:
    """The B×Hq×L×S scores, in the softmax's precision (float32 unless the inputs are double)."""
    q, k = n.input(0), n.input(1)
    if q.rank != 4 or k.rank != 4:
        raise Uncostable(f"FlexAttention takes rank-4 Q and K; they have ranks {q.rank}, {k.rank}")
    precision = n.attr("softmax_precision") or (
        q.dtype if q.dtype == onnx.TensorProto.DOUBLE else onnx.TensorProto.FLOAT)
    return TensorInfo("", precision, q.dims[:3] + k.dims[2:3])


@rule("FlexAttention", category=ATTENTION, domain=PREVIEW)
def flex_attention(n: Node) -> Cost:
    """MACs = B·Hq·L·S·(E + Ev) (Q·Kᵀ, P·V); + per score the scale, the softmax, the modifiers"""
    q, v = n.input(0), n.input(2)
    scores = _scores(n)
    products = scores.numel * (q.dims[3] + v.dims[3])
    cost = Cost(macs=products, dot_products=scores.numel + n.output().numel, flops=scores.numel)
    cost = cost + n.cost_of("Softmax", [scores], [scores], axis=-1)
    for modifier in _MODIFIERS:
        if n.attr(modifier) is not None:
            cost = cost + n.subgraph_cost(modifier, [scores])
    return cost


@backward("FlexAttention", domain=PREVIEW)
def flex_attention_backward(n: Node, grads: Grads) -> Cost:
    """dQ, dK, dV, dP: MACs twice the forward's; per score 3 FLOPs (softmax: P⊙(dP − Σ dP⊙P)) + 1 (scale)"""
    if any(n.attr(modifier) is not None for modifier in _MODIFIERS):
        raise Uncostable("backward of FlexAttention's score_mod and prob_mod subgraphs")
    q, k, v = n.input(0), n.input(1), n.input(2)
    scores = _scores(n)
    return Cost(macs=2 * scores.numel * (q.dims[3] + v.dims[3]),
                dot_products=q.numel + k.numel + v.numel + scores.numel, flops=4 * scores.numel)
