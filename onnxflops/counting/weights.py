"""Which initializers a node reads as learned weights: what `params` counts and training updates."""

from __future__ import annotations

import onnx

from onnxflops.costs import ALL_INPUTS, CONTRACTION, RECURRENT, Registry, Rule
from onnxflops.graph import GraphView, TensorInfo


def is_hyperparameter(table: Registry, view: GraphView, proto: onnx.NodeProto, rule: Rule,
                      info: TensorInfo) -> bool:
    """A one-element operand of elementwise arithmetic is a scale or an epsilon, not a weight,
    unless it is the bias added to a contraction's output (a Dense(1) layer)."""
    if rule.weights != ALL_INPUTS or info.numel != 1:
        return False
    return proto.op_type != "Add" or not any(_is_contraction_output(table, view, name)
                                             for name in proto.input if name)


def _is_contraction_output(table: Registry, view: GraphView, name: str) -> bool:
    producer = view.producer(name)
    rule = table.lookup(producer.domain, producer.op_type) if producer is not None else None
    return rule is not None and rule.category in (CONTRACTION, RECURRENT)
