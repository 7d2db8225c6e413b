"""Normalization: the Skip* forms (the residual sum, then the norm), onnxruntime's LayerNorm and
RMSNorm, the embedding sum before a LayerNorm, GroupNorm with its optional SiLU.
"""

from __future__ import annotations

from onnxflops.costs.contrib.common import added, like, ms_rule, nchw, present
from onnxflops.costs.node import Node
from onnxflops.costs.registry import NORMALIZATION, ZERO, Cost, rule
from onnxflops.graph import TensorInfo


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
