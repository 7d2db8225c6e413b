"""Ops that move, copy, select or reinterpret data: no arithmetic, only memory traffic."""

from __future__ import annotations

import math

from onnxflops.costs.node import Node
from onnxflops.costs.registry import ALL_INPUTS, DATA_MOVEMENT, ZERO, Cost, Grads, backward, rule
from onnxflops.errors import Uncostable


@rule(["Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Split", "Slice",
       "Expand", "Tile", "Pad", "Identity", "Cast", "Shape", "Size", "Where", "Compress",
       "ConstantOfShape", "OneHot", "Trilu", "ReverseSequence",
       "NonZero", "EyeLike", "Dropout", "Constant", "Optional", "OptionalGetElement",
       "OptionalHasElement", "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
       "SequenceInsert", "SequenceLength", "SplitToSequence", "ConcatFromSequence", "BitCast",
       "TensorScatter", "MaxUnpool"],
      category=DATA_MOVEMENT)
def data_movement(n: Node) -> Cost:
    """0: copies, views and selections move bytes but compute nothing"""
    return ZERO


@rule("Concat", category=DATA_MOVEMENT, weights=ALL_INPUTS)
def concat(n: Node) -> Cost:
    """0: joins tensors; a learned tensor joined to the activations (ViT's class token, expanded
    to the batch) is a parameter of the network"""
    return ZERO


@backward(["Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice",
           "Pad", "Identity", "Cast", "Where", "Compress", "Trilu", "ReverseSequence", "Dropout",
           "MaxUnpool", "Optional",
           "OptionalGetElement", "SequenceAt", "SequenceConstruct", "SequenceInsert",
           "SplitToSequence", "ConcatFromSequence"])
def view_backward(n: Node, grads: Grads) -> Cost:
    """0: the gradient of a view, copy or selection is dY put back in place (or selected)"""
    return ZERO


@backward(["Expand", "Tile"])
def repeat_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y) − numel(X) adds: dY summed back over the repeated dims"""
    return Cost(flops=n.output().numel - n.input(0).numel) if 0 in grads else ZERO


@rule("Range", category=DATA_MOVEMENT)
def range_(n: Node) -> Cost:
    """numel(Y) + 4 (its function body): Sub, Div, Ceil, Relu for the count, an Add per element"""
    adds = n.output().numel + 1  # the Loop adds delta per element; Sub is in start's type too
    return Cost(flops=3 + adds) if n.input(0).is_float else Cost(flops=3, int_ops=adds)


@rule(["Gather", "GatherElements", "GatherND"], category=DATA_MOVEMENT, weights=(0,))
def gather(n: Node) -> Cost:
    """0: a lookup (an Embedding's table, or the experts' weights a token is routed to, is its
    weight)"""
    return ZERO


@backward(["Gather", "GatherElements", "GatherND"])
def gather_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y) adds: dY scatter-added into the gathered tensor (an Embedding's table gradient)"""
    return Cost(flops=n.output().numel) if 0 in grads else ZERO


@rule(["ScatterElements", "ScatterND", "Scatter"], category=DATA_MOVEMENT)
def scatter(n: Node) -> Cost:
    """numel(updates) when reduction ≠ none (one add/mul/max per update), else 0"""
    if n.attr("reduction", "none") == "none":
        return ZERO
    return Cost(flops=n.input(2).numel) if n.input(2).is_float else Cost(int_ops=n.input(2).numel)


@backward(["ScatterElements", "ScatterND", "Scatter"])
def scatter_backward(n: Node, grads: Grads) -> Cost:
    """0 for reduction none/add: dData is dY (scattered positions zeroed), dUpdates gathers dY"""
    if n.attr("reduction", "none") not in ("none", "add"):
        raise Uncostable(f"backward of a scatter with reduction '{n.attr('reduction')}'")
    return ZERO


@rule(["Resize", "Upsample"], category=DATA_MOVEMENT)
def resize(n: Node) -> Cost:
    """numel(Y)·3·(2^d − 1) for linear over d resized dims, numel(Y)·3·(4^d − 1) cubic, 0 nearest"""
    mode = n.attr("mode", "nearest")
    if mode == "nearest":
        return ZERO
    x, y = n.input(0).dims, n.output().dims
    resized = sum(1 for a, b in zip(x, y) if a != b)
    taps = 4 if mode == "cubic" else 2
    # Each output interpolates taps^d inputs: taps^d − 1 lerps of 3 operations (a + t·(b − a)).
    return Cost(flops=math.prod(y) * 3 * (taps ** resized - 1))


@backward(["Resize", "Upsample"])
def resize_backward(n: Node, grads: Grads) -> Cost:
    """nearest: numel(Y) − numel(X) adds; linear/cubic: 2·taps^d·numel(Y), a weighted scatter-add"""
    x, y = n.input(0), n.output()
    mode = n.attr("mode", "nearest")
    if mode == "nearest":
        return Cost(flops=y.numel - x.numel)
    resized = sum(1 for a, b in zip(x.dims, y.dims) if a != b)
    taps = 4 if mode == "cubic" else 2
    return Cost(flops=2 * taps ** resized * y.numel)
