"""Values of small constant subgraphs (shape arithmetic) computed with numpy.

Exporters build shapes from a few standard ops (Shape, Gather, Concat, Unsqueeze, Slice, ...).
Evaluating those by the value table's exact backend (values.py) spares importing and setting up
onnx's reference evaluator, which is still used for any other op (`evaluate` raises
NotImplementedError for those).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxflops.analysis.values import EXACT, VALUES, Exact, Operands
from onnxflops.graph import is_standard_domain

# Opset 13 moved the axes of Squeeze/Unsqueeze to inputs; the ops are spelled as from then.
MIN_OPSET = 13
_EXACT = Exact()


def evaluate(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray],
             opset: int) -> dict[str, np.ndarray]:
    """The outputs of `nodes` (in execution order, standard ops only) from the values in `feeds`."""
    if opset < MIN_OPSET:
        raise NotImplementedError(f"opset {opset}")
    values = dict(feeds)
    for node in nodes:
        op = VALUES.get(node.op_type) if is_standard_domain(node.domain) else None
        if op is None or not op.backends & EXACT or len(node.output) != 1:
            raise NotImplementedError(node.op_type)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        values[node.output[0]] = np.asarray(op.fn(_EXACT, Operands(node.input, values.__getitem__),
                                                  attrs))
    return {n.output[0]: values[n.output[0]] for n in nodes}


def reference_evaluate(nodes: list[onnx.NodeProto], feeds: Mapping[str, np.ndarray],
                       opsets: Mapping[str, int], outputs: list[str]) -> dict[str, np.ndarray]:
    """The `outputs` of `nodes` from the values in `feeds`, by onnx's reference evaluator: any op
    of any opset it knows. It raises anything, and is imported only when first needed."""
    from onnx.reference import ReferenceEvaluator

    graph = helper.make_graph(
        nodes, "constants", [], [helper.make_value_info(o, onnx.TypeProto()) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), name=k) for k, v in feeds.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v)
                                                    for d, v in opsets.items()])
    values = ReferenceEvaluator(model).run(None, {})
    return {name: np.asarray(v) for name, v in zip(outputs, values) if v is not None}
