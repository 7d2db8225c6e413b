"""Tiny ONNX models built by hand for tests: the numbers they must give are derived in each test."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


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


def flop_counter_flops(module, *inputs) -> int:
    """What torch.utils.flop_counter.FlopCounterMode counts for one forward pass.

    Grad is enabled so torch's fused inference fast paths do not hide matmuls, and attention runs
    on the math backend: FlopCounterMode has no formula for the CPU flash-attention kernel.
    """
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as c:
        module(*inputs)
    return c.get_total_flops()
