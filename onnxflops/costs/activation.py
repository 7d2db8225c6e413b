"""Activations without an ONNX function body: one operation per element.

Those with a function body (LeakyRelu, HardSwish, Gelu, ...) are costed by expanding it, in
functions.py, so a fused activation and its decomposed form agree.
"""

from __future__ import annotations

from onnxflops.costs.elementwise import per_element, pointwise_gradient
from onnxflops.costs.node import Node
from onnxflops.costs.registry import ACTIVATION, Cost, rule


@rule(["Sigmoid", "Tanh"], category=ACTIVATION)
def pointwise_activation(n: Node) -> Cost:
    """numel(Y): one operation per element (a transcendental counts as one)"""
    return per_element(n, 1, on_input=0)


pointwise_gradient("Sigmoid", 3, "dY·Y·(1 − Y)")
pointwise_gradient("Tanh", 3, "dY·(1 − Y²)")
