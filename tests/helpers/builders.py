"""Tiny ONNX models built by hand for tests: the numbers they must give are derived in each test.

`model` takes float inputs by shape; `typed_model` takes inputs of mixed dtypes, for ops beyond
plain float arithmetic.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnxflops

RNG = np.random.default_rng(0)
FLOAT, INT64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64


def weight(name: str, shape, dtype=np.float32, value=None) -> onnx.TensorProto:
    array = np.asarray(value, dtype=dtype) if value is not None else \
        RNG.standard_normal(shape).astype(dtype)
    return numpy_helper.from_array(array, name=name)


def model(nodes, inputs: dict, weights=(), outputs=None, opset: int = 17,
          input_type=TensorProto.FLOAT, **graph_kwargs) -> onnx.ModelProto:
    """A model from nodes; `inputs` maps names to shapes (ints or symbolic strings)."""
    graph_inputs = [helper.make_tensor_value_info(n, input_type, s) for n, s in inputs.items()]
    produced = [o for n in nodes for o in n.output]
    outputs = outputs or [produced[-1]]
    graph_outputs = [helper.make_value_info(o, onnx.TypeProto()) for o in outputs]
    graph = helper.make_graph(nodes, "test", graph_inputs, graph_outputs, list(weights),
                              **graph_kwargs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def node(op_type: str, inputs, outputs, name: str | None = None, **attrs) -> onnx.NodeProto:
    return helper.make_node(op_type, list(inputs), list(outputs), name=name or outputs[0], **attrs)


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
