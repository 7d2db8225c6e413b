"""Structural rewrites: forms recognised by op types, shapes and scalar constants alone.

- a Conv/ConvTranspose/Gemm bias that is a broadcast zero constant (not a parameter) → no bias;
- comparisons of integers cast to float (TF loop counters, index checks) → integer comparisons;
- Loop state that the body passes through unchanged (TF carries weights so) → read from the outer
  scope, where they are initializers and count as params;
- a scalar factor on a MatMul operand (attention's 1/√d on q, or √ of it on both q and k) → one
  factor on the product.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxflops.canonical.editor import Editor, rename_in_graph
from onnxflops.graph import is_float
from onnxflops.ops import BROADCASTS, COMPARISONS, CONSTANT_SOURCES, SCALINGS, VIEWS

# --- zero biases that are not parameters -------------------------------------------------------

BIAS_SLOT = {"Conv": 2, "ConvTranspose": 2, "Gemm": 2}


def drop_broadcast_zero_bias(g: Editor) -> bool:
    """Conv(x, w, Expand(0)) → Conv(x, w): a bias broadcast from a zero constant holds no params."""
    changed = False
    for node in g.of_type(BIAS_SLOT):
        slot = BIAS_SLOT.get(node.op_type)
        if len(node.input) > slot and _is_broadcast_zero(g, node.input[slot]):
            with g.editing(node):
                del node.input[slot:]
            changed = True
    return changed


def _is_broadcast_zero(g: Editor, name: str) -> bool:
    node = g.producer.get(name)
    while node is not None and node.op_type in BROADCASTS:
        node = g.producer.get(node.input[0])
    if node is None or node.op_type not in CONSTANT_SOURCES:
        return False
    value = g.view.values.get(node.output[0])
    if node.op_type == "ConstantOfShape":
        filled = [a.t for a in node.attribute if a.name == "value"]
        value = numpy_helper.to_array(filled[0]) if filled else np.zeros(1)
    return value is not None and value.size <= 1 and not np.any(value)


# --- integer comparisons written in float ------------------------------------------------------

_INTEGER_TYPES = {onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.INT16,
                  onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16,
                  onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}


def compare_integers_as_integers(g: Editor) -> bool:
    """Less(Cast<float>(i), 12.0) → Less(i, 12): counters and indices compared as what they are."""
    changed = False
    for node in g.of_type(COMPARISONS):
        uncast = [_integer_before_cast(g, i) for i in node.input]
        dtypes = {g.info(u).dtype for u in uncast if u is not None}
        bounds = [g.scalar(i) if u is None else None for i, u in zip(node.input, uncast)]
        if len(dtypes) != 1 or any(u is None and (b is None or b != round(b))
                                   for u, b in zip(uncast, bounds)):
            continue
        np_dtype = helper.tensor_dtype_to_np_dtype(dtypes.pop())
        constants = []
        with g.editing(node):
            for slot, (u, bound) in enumerate(zip(uncast, bounds)):
                if u is None:
                    constants.append(g.add_constant(node.input[slot], np.array(int(bound), np_dtype)))
                    u = constants[-1].output[0]
                node.input[slot] = u
        g.insert_before(node, constants)
        changed = True
    return changed


def _integer_before_cast(g: Editor, name: str) -> str | None:
    cast = g.producer.get(name)
    if cast is None or cast.op_type != "Cast" or g.is_constant(name):
        return None
    source = g.info(cast.input[0])
    target = g.info(name)
    if source is None or target is None or source.dtype not in _INTEGER_TYPES \
            or not is_float(target.dtype):
        return None
    return cast.input[0]


# --- loop state that never changes --------------------------------------------------------------

def read_loop_invariants_from_outer_scope(g: Editor) -> bool:
    """Loop state the body returns unchanged is read from the outer scope instead of carried."""
    changed = False
    for node in g.of_type({"Loop"}):
        body = next((a.g for a in node.attribute if a.name == "body"), None)
        carried = len(node.input) - 2
        # A Loop whose body does not match its inputs is left for the count to call uncostable.
        if body is None or len(body.input) != len(node.input) or len(body.output) < 1 + carried:
            continue
        invariant = [k for k in range(carried)
                     if body.output[1 + k].name == body.input[2 + k].name and node.input[2 + k]
                     and (k >= len(node.output) or node.output[k] not in g.outputs)]
        if not invariant:
            continue
        for k in invariant:
            with g.editing(node):
                rename_in_graph(body, body.input[2 + k].name, node.input[2 + k])
            if k < len(node.output) and node.output[k]:
                g.rename_uses(node.output[k], node.input[2 + k])
        keep = [k for k in range(carried) if k not in invariant]
        inputs = list(node.input[:2]) + [node.input[2 + k] for k in keep]
        formal = list(body.input[:2]) + [body.input[2 + k] for k in keep]
        results = [body.output[0]] + [body.output[1 + k] for k in keep] + list(body.output[1 + carried:])
        outputs = [node.output[k] for k in keep] + list(node.output[carried:])
        with g.editing(node):
            _set_repeated(node.input, inputs)
            _set_repeated(body.input, formal)
            _set_repeated(body.output, results)
            _set_repeated(node.output, outputs)
        changed = True
    return changed


def _set_repeated(field, items: list) -> None:
    copies = []
    for item in items:
        if isinstance(item, str):
            copies.append(item)
        else:
            copy = type(item)()
            copy.CopyFrom(item)
            copies.append(copy)
    del field[:]
    field.extend(copies)


# --- scalar factors of a matrix product ---------------------------------------------------------

def scale_products_not_operands(g: Editor) -> bool:
    """MatMul(q·a, k·b) → MatMul(q, k)·(a·b): a scalar factor counts once, on the product, and
    not at all where a·b = 1 (torch's attention translation scales q and k by √s with s = 1)."""
    changed = False
    for node in g.of_type({"MatMul"}):
        if any(g.is_constant(i) for i in node.input):
            continue  # products of two activations (attention's q·kᵀ), not layers with weights
        found = {id(f[1]): f for f in map(lambda i: _scalar_factor_feeding(g, i), node.input) if f}
        if not found or not node.output:  # a node of a broken file may name no output at all
            continue
        info = g.info(node.output[0])
        if info is None or not info.is_float:
            continue
        factor = math.prod(scale for scale, _ in found.values())
        for _, scaling in found.values():
            variable = next(i for i in scaling.input if not g.is_constant(i))
            g.rename_uses(scaling.output[0], variable)
        if factor != 1.0:  # factors that cancel leave the product as it is: no work
            _scale_output(g, node, info, factor)
        g.remove(n for _, n in found.values())
        changed = True
    return changed


def _scale_output(g: Editor, node: onnx.NodeProto, info, factor: float) -> None:
    """node's output y becomes y'·factor: one Mul after the node, writing the name y had."""
    product, result = g.fresh(node.output[0]), node.output[0]
    g.set_info(product, info.dtype, info.shape)
    with g.editing(node):
        node.output[0] = product
    scale = g.add_constant(result, np.array(factor, helper.tensor_dtype_to_np_dtype(info.dtype)))
    multiply = g.named_after(helper.make_node("Mul", [product, scale.output[0]], [result]), node)
    g.insert_after(node, [scale, multiply])


def _scalar_factor_feeding(g: Editor, name: str) -> tuple[float, onnx.NodeProto] | None:
    """(factor, the Mul/Div node) when `name` is a view of x·c or x/c with c a scalar constant."""
    node = g.producer.get(name)
    while node is not None and node.op_type in VIEWS and g.sole_consumer(node.input[0]) is node:
        node = g.producer.get(node.input[0])
    if node is None or node.op_type not in SCALINGS or len(node.input) != 2 \
            or g.sole_consumer(node.output[0]) is None:
        return None
    a, b = node.input
    if node.op_type == "Mul":
        scale = g.scalar(b) if not g.is_constant(a) else g.scalar(a)
        variable = a if not g.is_constant(a) else b
    else:
        scale = g.scalar(b)
        scale = None if not scale else 1.0 / scale
        variable = a
    if scale is None or g.is_constant(variable):
        return None
    info, out = g.info(variable), g.info(node.output[0])
    if info is None or out is None or info.shape != out.shape:
        return None
    return scale, node


