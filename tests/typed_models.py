"""Tiny models whose inputs have mixed dtypes, for ops beyond plain float arithmetic."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

import onnxflops

FLOAT, INT64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64


def typed_model(nodes, inputs: dict, constants: dict | None = None, opset: int = 28,
                outputs=None, domains: dict | None = None) -> onnx.ModelProto:
    """`inputs` maps names to (dtype, shape); `constants` maps names to arrays (initializers);
    `outputs` lists names, or maps them to (dtype, shape) where ONNX cannot infer them (ops of
    other domains)."""
    graph_inputs = [helper.make_tensor_value_info(name, dtype, shape)
                    for name, (dtype, shape) in inputs.items()]
    initializers = [numpy_helper.from_array(np.asarray(v), name)
                    for name, v in (constants or {}).items()]
    outputs = outputs or [nodes[-1].output[0]]
    typed = outputs if isinstance(outputs, dict) else {o: None for o in outputs}
    graph = helper.make_graph(nodes, "test", graph_inputs,
                              [helper.make_tensor_value_info(o, *t) if t else
                               helper.make_value_info(o, onnx.TypeProto())
                               for o, t in typed.items()],
                              initializers)
    opsets = {"": opset, **(domains or {})}
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v)
                                                   for d, v in opsets.items()])


def costed(model: onnx.ModelProto, **count_kwargs) -> onnxflops.Report:
    """The report of a model every node of which must be costed."""
    report = onnxflops.count(model, **count_kwargs)
    assert not report.uncosted, report.uncosted
    return report
