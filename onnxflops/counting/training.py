"""Which tensors carry a gradient in training, and so which input gradients each node computes.

A tensor carries a gradient when it is computed from a trainable weight: an initializer (or a
constant computed from initializers) that its consumer reads as a learned parameter, the same
weights that `params` counts. The model's inputs and the constants that are not weights (shape
arithmetic, masks, scalars, BatchNormalization's running statistics) carry none, so the first
layer computes no gradient for its input, as autograd does for an input without requires_grad.
"""

from __future__ import annotations

from typing import Iterable

import onnx

from onnxflops.costs import Registry
from onnxflops.counting.weights import LearnedWeights, is_hyperparameter
from onnxflops.graph import GraphView, bodies, free_names


class GradientFlow:
    """The nodes of one graph that the backward pass goes through, and for each the input slots
    whose gradient it computes (none for a Loop whose body alone reads the weights)."""

    def __init__(self, table: Registry, view: GraphView, carrying: Iterable[str] = (),
                 parent: "GradientFlow | None" = None, weights_learn: bool = True):
        """`table`: the cost table, whose rules say which input slots are weights. `carrying`:
        tensors that carry a gradient into the graph (formal inputs of a body). `weights_learn`
        False: only `carrying` starts a gradient (ONNX's Gradient op differentiates by the
        tensors it names, never by the weights as such)."""
        self.table = table
        self.view = view
        self.parent = parent
        self.weights_learn = weights_learn
        self.learned = LearnedWeights(table)
        self._carrying: set[str] = set(carrying)
        self._grads: dict[tuple[str, ...], frozenset[int]] = {}  # by the node's outputs
        for proto in view.nodes():
            outputs = [o for o in proto.output if o]
            if weights_learn and outputs and all(view.is_constant(o) for o in outputs):
                continue  # constant work: weights assembled before the run carry their sources'
            grads = frozenset(slot for slot, name in enumerate(proto.input)
                              if name and self._needs_gradient(proto, slot, name))
            if grads or self._body_reads_gradient(proto):
                self._grads[tuple(proto.output)] = grads
                self._carrying.update(o for o in outputs if _is_float(view, o))

    def needs_backward(self, proto: onnx.NodeProto) -> bool:
        return tuple(proto.output) in self._grads

    def grads(self, proto: onnx.NodeProto) -> frozenset[int]:
        return self._grads.get(tuple(proto.output), frozenset())

    def carries(self, name: str) -> bool:
        return name in self._carrying or (self.parent is not None and self.parent.carries(name))

    def _body_reads_gradient(self, proto: onnx.NodeProto) -> bool:
        """A subgraph of the node reads a tensor from outside that carries a gradient or is a
        weight (a Loop body's matmul by an outer initializer)."""
        return any(_is_float(self.view, name)
                   and (self.carries(name) or self.weights_learn and self._is_trainable(name))
                   for name in set().union(*map(free_names, bodies(proto))))

    def _needs_gradient(self, proto: onnx.NodeProto, slot: int, name: str) -> bool:
        if not _is_float(self.view, name):
            return False
        if self.carries(name):
            return True
        if not self.weights_learn:
            return False
        rule = self.table.lookup(proto.domain, proto.op_type)
        if rule is None or slot in rule.buffers or not rule.is_weight_slot(slot):
            return False
        if is_hyperparameter(self.table, self.view, proto, rule, self.view.info(name)):
            return False
        return self._is_trainable(name, self.learned.unlearned(self.view, proto, name))

    def _is_trainable(self, name: str, unlearned: frozenset[str] = frozenset()) -> bool:
        view = self.view
        if not view.holds_value(name):
            return False
        for source in view.weight_sources(name) - unlearned:
            info = view.info(source)
            if info is not None and info.is_float and info.shape:
                return True
        return False


def _is_float(view: GraphView, name: str) -> bool:
    info = view.info(name)
    return info is not None and info.is_float
