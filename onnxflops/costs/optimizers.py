"""ONNX's training ops (ai.onnx.preview.training): one optimizer step over its tensors, and the
Gradient of one tensor of the graph by others.

Each optimizer op updates tensors X_1..X_n, given their gradients and states, element by element as its
definition's pseudo code writes it; the scalar learning rate it adjusts once per step is counted
once. An optimizer step is not differentiated: its backward is nothing.
"""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import ELEMENTWISE, OTHER, ZERO, Cost, Grads, backward, rule
from onnxflops.errors import Uncostable

TRAINING = "ai.onnx.preview.training"


def _updated_elements(n: Node, groups: int) -> int:
    """Σ numel(X_i): the inputs after R and T are `groups` lists of n tensors, X first."""
    tensors = n.num_inputs - 2
    if tensors <= 0 or tensors % groups:
        raise Uncostable(f"{n.op_type} takes R, T and {groups} lists of tensors alike; it has "
                         f"{tensors} tensors after R and T")
    return sum(n.input(2 + i).numel for i in range(tensors // groups))


@rule("Momentum", category=ELEMENTWISE, domain=TRAINING)
def momentum(n: Node) -> Cost:
    """7 FLOPs per element of X (standard), 9 (nesterov): G' = c·X + G, V' = α·V + β·G', X − R·V'"""
    # nesterov: X' = X − R·(G' + α·V'), two operations more per element
    per_element = 9 if n.attr("mode", b"standard") in (b"nesterov", "nesterov") else 7
    return Cost(flops=per_element * _updated_elements(n, 3))


@rule("Adagrad", category=ELEMENTWISE, domain=TRAINING)
def adagrad(n: Node) -> Cost:
    """9 FLOPs per element of X + 3: r = R/(1 + T·d); G' = c·X + G; H' = H + G'²; X − r·G'/(√H' + ε)"""
    return Cost(flops=9 * _updated_elements(n, 3) + 3)


@rule("Adam", category=ELEMENTWISE, domain=TRAINING)
def adam(n: Node) -> Cost:
    """15 FLOPs per element of X + 7: G', V' = α·V + (1−α)·G', H' = β·H + (1−β)·G'², X', (1−c')·X'"""
    # per element: G' 2, V' 3, H' 4, √H' + ε 2, X' = X − R'·V'/(√H' + ε) 3, (1−c')·X' 1; the rate
    # R' = R·√(1 − β^T)/(1 − α^T): 2 powers, 2 subtractions, a root, a product and a quotient
    return Cost(flops=15 * _updated_elements(n, 4) + 7)


@rule("Gradient", category=OTHER, domain=TRAINING)
def gradient(n: Node) -> Cost:
    """Σ backward(v) over the nodes v on a path from xs to y: the backward pass of that part"""
    # The nodes between the tensors named by `xs` and `y` are the graph's own (the op's inputs
    # are the values they are differentiated at); the gradients of xs whose outputs are left
    # empty are not computed. `zs` are inputs of y that carry no gradient, so they start none.
    xs, y = list(n.attr("xs", [])), n.attr("y")
    if not xs or not y:
        raise Uncostable("Gradient names no xs or no y")
    wanted = [x.decode() if isinstance(x, bytes) else x for i, x in enumerate(xs)
              if i < n.num_outputs and n.proto.output[i]]
    return n.differentiated_backward(wanted, y.decode() if isinstance(y, bytes) else y)


@backward(["Momentum", "Adagrad", "Adam", "Gradient"], domain=TRAINING)
def optimizer_backward(n: Node, grads: Grads) -> Cost:
    """0: an optimizer step, or a gradient already taken, is not differentiated"""
    return ZERO
