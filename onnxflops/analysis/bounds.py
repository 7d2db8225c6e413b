"""Output sizes that depend on data, typed at their upper bound and recorded as bounds.

How many elements NonZero finds, which boxes NonMaxSuppression keeps, how many values Unique or
Compress gives, a TopK whose k is computed from data, the size a Resize takes from box coordinates,
the shape a ConstantOfShape reads from data (a length regulator's frames): none is known before a
run. Where ONNX's inference leaves such a dim unknown, it takes the largest
size the op can give (every candidate, k's largest value, the top of the range the graph gives the
sizes: ranges.py), and the tensor is recorded in GraphView.bounds with why, so that every
count read from it is reported as an upper bound, never silently. Which branch of an If runs is
data too (a detector's "no boxes left" test): its outputs take each dim's larger size over the
branches.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import onnx

from onnxflops.analysis.ranges import value_range
from onnxflops.analysis.sequences import axis_from_front
from onnxflops.graph import GraphView, NodeRow, TensorInfo, is_known, taken_branch

_INT64 = onnx.TensorProto.INT64
# A bound of more elements is no size a run meets: the range found was too wide to use.
MAX_BOUND_ELEMENTS = 2**40


def bound_outputs(view: GraphView, row: NodeRow) -> bool:
    """Type a data-dependent op's unknown outputs at their upper bound; True where it did."""
    rule = _RULES.get(row.op_type) if not row.domain else None
    if all(view.is_constant(name) for name in row.inputs if name):
        return False  # its value, so its size, is evaluated as constant work
    infos = [view.info(name) if name else None for name in row.inputs]
    if rule is None or not infos or infos[0] is None or not infos[0].concrete \
            or not infos[0].shape and row.op_type != "NonZero":
        return False
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in row.proto.attribute}
    try:
        found = rule(view, row, infos, attrs)
    except (ArithmeticError, LookupError, TypeError, ValueError):
        found = None  # a broken file's node: left unknown, and reported by the nodes it feeds
    if found is None:
        return False
    shapes, why = found
    for name, (dtype, shape) in zip(row.outputs, shapes):
        if name:
            declared = view.info(name)
            view.tensors[name] = TensorInfo(name, dtype if dtype is not None else
                                            (declared.dtype if declared else 0), shape)
            view.bounds[name] = why
            view.unbounded.pop(name, None)
    return True


# An If branch's output types, each with why its size is a bound (None where it is not one).
BranchTypes = Callable[[onnx.GraphProto], list[tuple[TensorInfo | None, str | None]]]


def bound_branches(view: GraphView, row: NodeRow, branch_types: BranchTypes) -> bool:
    """Type an If's unknown outputs as its taken branch's where the condition is known, else as
    the larger of its branches' (the condition is data); True where it typed some.
    `branch_types(body)`: the branch's output types, analysed in scope."""
    branches = {a.name: a.g for a in row.proto.attribute if a.type == onnx.AttributeProto.GRAPH}
    then, other = branches.get("then_branch"), branches.get("else_branch")
    if then is None or other is None or len(then.output) != len(other.output):
        return False
    if all(not name or is_known(view.info(name)) for name in row.outputs):
        return False
    taken = taken_branch(view.value(row.inputs[0])) if row.inputs else None
    if taken is not None:  # the other branch cannot run: only this one is analysed
        runs = branch_types(branches[taken])
        pairs = zip(runs, runs)
    else:
        pairs = zip(branch_types(then), branch_types(other))
    typed = False
    for name, (a, b) in zip(row.outputs, pairs):
        info = view.info(name) if name else None
        if not name or info is not None and info.known or a[0] is None or b[0] is None:
            continue
        shape = larger_shape(a[0].shape, b[0].shape)
        if shape is None:
            continue
        view.tensors[name] = TensorInfo(name, a[0].dtype or b[0].dtype, shape)
        why = a[1] or b[1] or (None if a[0].shape == b[0].shape else
                               f"the larger of the If's branches ({_dims(a[0].shape)} or "
                               f"{_dims(b[0].shape)})")
        if why:
            view.bounds[name] = why
        typed = True
    return typed


def reaches_bound(view: GraphView, names: list[str]) -> bool:
    """Whether any of `names` is computed from a size taken at its upper bound: there, a shape
    the graph refuses may be one it never meets (a trace holds the sizes it was traced at)."""
    seen: set[str] = set()
    todo = [name for name in names if name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        scope: GraphView | None = view
        while scope is not None:
            if name in scope.bounds:
                return True
            scope = scope.parent
        node = view.producer(name)
        if node is not None:
            todo.extend(i for i in node.input if i)
    return False


def larger_shape(a: tuple | None, b: tuple | None) -> tuple | None:
    """max(a_i, b_i) per dim: the shape holding either of two same-rank shapes; None where the
    ranks differ or a dim is not a number."""
    if a is None or b is None or len(a) != len(b) \
            or not all(isinstance(d, int) for d in (*a, *b)):
        return None
    return tuple(max(x, y) for x, y in zip(a, b))


def _dims(shape: tuple) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def _non_zero(view, row, infos, attrs):
    x = infos[0]
    count = math.prod(x.shape)
    return [(_INT64, (len(x.shape), count))], f"every one of the {count} elements nonzero"


def _top_k(view, row, infos, attrs):
    x = infos[0]
    axis = axis_from_front(attrs.get("axis", -1), len(x.shape))
    if axis is None:
        return None
    size = x.shape[axis]
    shape = x.shape[:axis] + (size,) + x.shape[axis + 1:]
    return [(x.dtype, shape), (_INT64, shape)], f"k at most the {size} elements of axis {axis}"


def _non_max_suppression(view, row, infos, attrs):
    scores = infos[1] if len(infos) > 1 else None
    if scores is None or not scores.concrete or len(scores.shape) != 3:
        return None
    batch, classes, boxes = scores.shape
    kept = boxes
    limit = view.value(row.inputs[2]) if len(row.inputs) > 2 and row.inputs[2] else None
    if limit is not None and limit.size == 1:
        kept = min(boxes, int(np.asarray(limit).reshape(())))
    selected = batch * classes * kept
    return [(_INT64, (selected, 3))], (f"every class keeping {kept} boxes: "
                                        f"{batch}·{classes}·{kept} selected")


def _unique(view, row, infos, attrs):
    x = infos[0]
    axis = attrs.get("axis")
    if axis is None:
        items = math.prod(x.shape)
        values, inverse = (items,), (items,)
    else:
        axis = axis_from_front(axis, len(x.shape))
        if axis is None:
            return None
        items = x.shape[axis]
        values, inverse = x.shape, (items,)
    return [(x.dtype, values), (_INT64, (items,)), (_INT64, inverse), (_INT64, (items,))], \
        f"all {items} items distinct"


def _compress(view, row, infos, attrs):
    x, condition = infos[0], infos[1] if len(infos) > 1 else None
    if condition is None or not condition.concrete or len(condition.shape) != 1:
        return None
    axis = attrs.get("axis")
    if axis is None:
        kept = min(math.prod(x.shape), condition.shape[0])
        return [(x.dtype, (kept,))], f"every one of {kept} conditions true"
    axis = axis_from_front(axis, len(x.shape))
    if axis is None:
        return None
    kept = min(x.shape[axis], condition.shape[0])
    return [(x.dtype, x.shape[:axis] + (kept,) + x.shape[axis + 1:])], \
        f"every one of {kept} conditions true"


def _resize(view, row, infos, attrs):
    """Resize to `sizes` read from data (a mask pasted at its box's size): each output dim at the
    largest its size can be, as the graph fixes the range of the values it is computed from."""
    x = infos[0]
    sizes = row.inputs[3] if len(row.inputs) > 3 else ""
    if not sizes or view.value(sizes) is not None or attrs.get("axes") is not None:
        return None
    shape = _largest_sizes(view, sizes, len(x.shape))
    if shape is None:
        return _unbounded(view, row, "sizes")
    return [(x.dtype, shape)], (f"sizes read from data, at most {_dims(shape)} as the values "
                                "they are computed from are ranged")


def _constant_of_shape(view, row, infos, attrs):
    """A tensor of the shape read from data (a length regulator's frames: the sum of durations
    it predicts), each dim at the largest the graph's ranges let it be."""
    shape_info = infos[0]
    if view.value(row.inputs[0]) is not None or len(shape_info.shape) != 1:
        return None
    shape = _largest_sizes(view, row.inputs[0], shape_info.shape[0])
    if shape is None:
        return _unbounded(view, row, "shape")
    value = attrs.get("value")
    dtype = value.data_type if value is not None else onnx.TensorProto.FLOAT
    return [(dtype, shape)], (f"shape read from data, at most {_dims(shape)} as the values it is "
                              "computed from are ranged")


def _unbounded(view: GraphView, row: NodeRow, what: str) -> None:
    """No bound: the output's size is recorded as read from data the graph leaves unbounded, so
    that the nodes it reaches say why they are uncosted (GraphView.unbounded)."""
    if row.outputs and row.outputs[0]:
        view.unbounded[row.outputs[0]] = (f"a size read from data the graph does not bound "
                                          f"(the {what} of {row.op_type} "
                                          f"'{row.proto.name or row.outputs[0]}')")
    return None


def _largest_sizes(view: GraphView, sizes: str, rank: int) -> tuple[int, ...] | None:
    """The largest value of each of the `rank` sizes in tensor `sizes`, by the range the graph
    fixes for each; None where one has no finite end (or the bound is no size a run meets)."""
    highest = value_range(view, sizes)[1]
    if np.shape(highest) != (rank,):
        return None  # one range over all dims: no dim's own
    if not np.all(np.isfinite(highest)) or np.any(highest < 0) \
            or math.prod(int(h) for h in highest) > MAX_BOUND_ELEMENTS:
        return None
    return tuple(int(h) for h in highest)


_RULES = {"NonZero": _non_zero, "TopK": _top_k, "NonMaxSuppression": _non_max_suppression,
          "Unique": _unique, "Compress": _compress, "Resize": _resize,
          "ConstantOfShape": _constant_of_shape}
BOUNDED_OPS = frozenset(_RULES)
