"""The canonical rules, in the order they run, and the pass that applies them to every graph.

Exporters write one computation in several ways. Each rule recognises a family of forms by
structure (op types, shapes, and the values of scalar constants, never of weights) and rewrites it
to the form the cost table prices: structural.py holds the forms told by structure alone,
probes.py those recognised by evaluating a candidate subgraph on probe inputs, masking.py
TensorFlow's select over attention scores written as the mask add HF writes, and torch's NaN
guard on a masked softmax read as the softmax. A rule is a function of an Editor that returns
whether it changed the graph; it is listed in RULES with the op types whose presence lets it
match anything.

It runs on the analyzed model and keeps every tensor's analyzed shape, adding shapes for the
tensors it creates, so the model is not analyzed again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import NamedTuple

import onnx

from onnxflops.analysis import AnalyzedModel, mark_constants
from onnxflops.canonical.editor import Editor
from onnxflops.canonical.masking import select_as_masked_add, softmax_without_nan_guard
from onnxflops.canonical.probes import fuse_activations, fuse_layer_norms
from onnxflops.canonical.structural import (
    BIAS_SLOT,
    compare_integers_as_integers,
    drop_broadcast_zero_bias,
    read_loop_invariants_from_outer_scope,
    scale_products_not_operands,
)
from onnxflops.graph import GraphView, bodies
from onnxflops.ops import COMPARISONS, GELU_CORES, HOLDS_SUBGRAPHS, MEANS


class Rule(NamedTuple):
    anchors: frozenset[str]  # op types whose presence lets the rule match anything
    rewrite: Callable[[Editor], bool]  # True where it changed the graph


RULES: tuple[Rule, ...] = (
    Rule(frozenset({"Not"}), select_as_masked_add),
    Rule(frozenset({"IsNaN"}), softmax_without_nan_guard),
    Rule(frozenset({"Loop"}), read_loop_invariants_from_outer_scope),
    Rule(frozenset(BIAS_SLOT), drop_broadcast_zero_bias),
    Rule(COMPARISONS, compare_integers_as_integers),
    Rule(GELU_CORES, fuse_activations),
    Rule(MEANS, fuse_layer_norms),
    Rule(frozenset({"MatMul"}), scale_products_not_operands),
)


def canonicalize(analyzed: AnalyzedModel, weights: Collection[str] = ()) -> AnalyzedModel:
    """Rewrite the analyzed model (which analyze made for this pipeline) in place and return it.

    `weights`: graph inputs the rules read as constants (a function body's inputs that are
    weights where it is called), though the analyzed model holds them as inputs, as its cost
    does."""
    view = analyzed.graph
    if weights:
        view.constant.update(weights)
        mark_constants(view)
    changed = _rewrite_graph(analyzed.model.graph, view, analyzed.opsets.get("", 0))
    if weights:
        _constants_as_analyzed(analyzed.model.graph, view)
    elif changed:
        mark_constants(view)
    return analyzed


def _constants_as_analyzed(graph: onnx.GraphProto, view: GraphView) -> None:
    """Mark the view's constants afresh, from its initializers and Constant nodes, as analysis
    marks them (what the rules read as weights no longer among them)."""
    inputs = {i.name for i in graph.input}
    view.constant.clear()
    view.constant.update(name for name in view.initializers if name not in inputs)
    view.constant.update(row.outputs[0] for row in view.rows()
                         if row.op_type == "Constant" and not row.domain)
    mark_constants(view)


def _rewrite_graph(graph: onnx.GraphProto, view: GraphView, opset: int) -> bool:
    changed = False
    present = {row[1] for row in view.rows()}
    for node, op_type, _, _, _ in view.rows() if present & HOLDS_SUBGRAPHS else ():
        if op_type in HOLDS_SUBGRAPHS:
            for body in bodies(node):
                inner = GraphView(body, view)
                mark_constants(inner)
                changed |= _rewrite_graph(body, inner, opset)
    editor = None
    for rule in RULES:
        if rule.anchors & present:
            editor = editor or Editor(graph, view, opset)
            changed |= rule.rewrite(editor)
    return changed
