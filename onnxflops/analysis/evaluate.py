"""Values of small constant subgraphs (shape arithmetic) computed with numpy.

Exporters build shapes from a few standard ops (Shape, Gather, Concat, Unsqueeze, Slice, ...).
Evaluating those directly spares importing and setting up onnx's reference evaluator, which
is still used for any other op (`evaluate` raises NotImplementedError for those).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxflops.graph import is_standard_domain

# Opset 13 moved the axes of Squeeze/Unsqueeze to inputs; the ops below are spelled as from then.
MIN_OPSET = 13
_CASTABLE = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BOOL,
             TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
             TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64}

Op = Callable[[list[np.ndarray | None], dict[str, Any]], np.ndarray]


def evaluate(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray],
             opset: int) -> dict[str, np.ndarray]:
    """The outputs of `nodes` (in execution order, standard ops only) from the values in `feeds`."""
    if opset < MIN_OPSET:
        raise NotImplementedError(f"opset {opset}")
    values = dict(feeds)
    for node in nodes:
        op = _OPS.get(node.op_type) if is_standard_domain(node.domain) else None
        if op is None or len(node.output) != 1:
            raise NotImplementedError(node.op_type)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        values[node.output[0]] = np.asarray(op([values[i] if i else None for i in node.input],
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


def _shape(x: list, attrs: dict) -> np.ndarray:
    return np.array(x[0].shape[attrs.get("start", 0):attrs.get("end")], dtype=np.int64)


def _slice(x: list, attrs: dict) -> np.ndarray:
    data, starts, ends = x[0], x[1], x[2]
    axes = x[3] if len(x) > 3 and x[3] is not None else range(len(starts))
    steps = x[4] if len(x) > 4 and x[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        # numpy clamps out-of-range bounds as ONNX does.
        index[int(axis)] = slice(int(start), int(end), int(step))
    return data[tuple(index)]


def _cast(x: list, attrs: dict) -> np.ndarray:
    if attrs["to"] not in _CASTABLE:
        raise NotImplementedError(f"Cast to {attrs['to']}")
    return x[0].astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))


def _cast_like(x: list, attrs: dict) -> np.ndarray:
    return _cast(x[:1], {"to": helper.np_dtype_to_tensor_dtype(x[1].dtype)})


def _expand(x: list, attrs: dict) -> np.ndarray:
    """Broadcast both ways: the input to the shape, and dims of 1 in the shape to the input's."""
    shape = np.broadcast_shapes(x[0].shape, tuple(int(d) for d in x[1]))
    return np.array(np.broadcast_to(x[0], shape))


def _cumsum(x: list, attrs: dict) -> np.ndarray:
    if attrs.get("exclusive", 0) or attrs.get("reverse", 0):
        raise NotImplementedError("CumSum exclusive or reverse")
    return np.cumsum(x[0], axis=int(x[1].reshape(())), dtype=x[0].dtype)


def _sqrt(x: list, attrs: dict) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # √ of a negative is NaN, as ONNX has it
        return np.sqrt(x[0])


def _constant_of_shape(x: list, attrs: dict) -> np.ndarray:
    fill = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    return np.full(tuple(int(d) for d in x[0]), fill.reshape(-1)[0], dtype=fill.dtype)


def _reshape(x: list, attrs: dict) -> np.ndarray:
    data, shape = x[0], [int(d) for d in x[1]]
    if not attrs.get("allowzero", 0):  # a 0 keeps the input's dim
        shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return data.reshape(shape)


def _squeeze(x: list, attrs: dict) -> np.ndarray:
    axes = x[1] if len(x) > 1 and x[1] is not None else None
    return np.squeeze(x[0], axis=None if axes is None else tuple(int(a) for a in axes))


def _gather_elements(x: list, attrs: dict) -> np.ndarray:
    data, indices, axis = x[0], x[1], attrs.get("axis", 0)
    indices = np.where(indices < 0, indices + data.shape[axis], indices)  # negative: from the end
    return np.take_along_axis(data, indices, axis=axis)


_OPS: dict[str, Op] = {
    "Identity": lambda x, a: x[0],
    "Shape": _shape,
    "Size": lambda x, a: np.array(x[0].size, dtype=np.int64),
    "Gather": lambda x, a: np.take(x[0], x[1], axis=a.get("axis", 0)),
    "GatherElements": _gather_elements,
    "Concat": lambda x, a: np.concatenate(x, axis=a["axis"]),
    "Unsqueeze": lambda x, a: np.expand_dims(x[0], tuple(int(i) for i in x[1])),
    "Squeeze": _squeeze,
    "Slice": _slice,
    "Reshape": _reshape,
    "Cast": _cast,
    "CastLike": _cast_like,
    "Expand": _expand,
    "Transpose": lambda x, a: np.transpose(x[0], a.get("perm")),
    "CumSum": _cumsum,
    "Max": lambda x, a: functools.reduce(np.maximum, x),
    "Min": lambda x, a: functools.reduce(np.minimum, x),
    "Not": lambda x, a: np.logical_not(x[0]),
    "Sqrt": _sqrt,  # an attention scale, √(1/√d)
    "ConstantOfShape": _constant_of_shape,
    "Range": lambda x, a: np.arange(x[0], x[1], x[2], dtype=x[0].dtype),
    "Neg": lambda x, a: np.negative(x[0]),
    "Add": lambda x, a: np.add(x[0], x[1]),
    "Sub": lambda x, a: np.subtract(x[0], x[1]),
    "Mul": lambda x, a: np.multiply(x[0], x[1]),
    "Equal": lambda x, a: np.equal(x[0], x[1]),
    "Where": lambda x, a: np.where(x[0], x[1], x[2]),
}
