"""The range a tensor's values lie in, by interval arithmetic from the values the graph fixes.

A size read from data (a mask pasted at its box's size: Resize to sizes computed from box
coordinates) is unknown before a run, but the graph often fixes its range: the boxes were clipped
to the image, the mask's size is a constant. Each op's output range follows from its inputs'
(sound: every value a run can give lies in it, though it may be wider), through the layout ops,
arithmetic, Max/Min/Clip and reductions, across the scopes a subgraph reads. What the graph does
not fix (a model input, an op not followed, a division by a range holding 0) is unbounded,
[-inf, inf], and what is computed from it too, unless a Clip, Max or Min bounds it again.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Callable, Iterator

import numpy as np
import onnx

from onnxflops import ops
from onnxflops.graph import GraphView

Range = tuple[np.ndarray, np.ndarray]  # lowest and highest, broadcastable to the tensor's shape

_MONOTONE = {"Floor": np.floor, "Ceil": np.ceil, "Round": np.round, "Relu":
             lambda v: np.maximum(v, 0), "Sqrt": np.sqrt, "Exp": np.exp}
UNBOUNDED: Range = (np.asarray(-np.inf), np.asarray(np.inf))
_DEPTH = 300  # producers followed back at most: a range not found in as many is lost
_INTEGERS = frozenset({onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32,
                       onnx.TensorProto.INT64, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16,
                       onnx.TensorProto.UINT32, onnx.TensorProto.UINT64})


# While a subgraph is analysed as a model of its own (analyze.refine_subgraph), the ranges of the
# tensors it reads from the scopes around it, which are inputs there.
_AROUND: ContextVar[Callable[[str], Range] | None] = ContextVar("_AROUND", default=None)


def value_range(view: GraphView, name: str) -> Range:
    """[lo, hi] holding every value of tensor `name` (infinite where the graph fixes no end)."""
    try:
        return _Ranges(view).of(name, _DEPTH)
    except RecursionError:  # a chain deeper than the interpreter's stack: no end fixed
        return UNBOUNDED


@contextlib.contextmanager
def scope_around(view: GraphView) -> Iterator[None]:
    """Within: a model made of a subgraph of `view` finds the ranges of `view`'s tensors."""
    ranges = _Ranges(view)
    token = _AROUND.set(lambda name: ranges.of(name, _DEPTH))
    try:
        yield
    finally:
        _AROUND.reset(token)


class _Ranges:
    def __init__(self, view: GraphView):
        self.view = view
        self.around = _AROUND.get()
        self.found: dict[str, Range] = {}

    def of(self, name: str, depth: int) -> Range:
        if not name or depth <= 0:
            return UNBOUNDED
        if name in self.found:
            return self.found[name]
        self.found[name] = UNBOUNDED  # a cycle (a Loop's carried value) has no range
        value = self.view.value(name)
        if value is not None and value.size and np.issubdtype(value.dtype, np.number):
            found = (value.astype(np.float64), value.astype(np.float64))
        else:
            node = _producer(self.view, name)
            if node is not None:
                found = self._computed(node, name, depth - 1)
            else:
                found = self.around(name) if self.around is not None else UNBOUNDED
        self.found[name] = _no_nan(found)
        return found

    def _computed(self, node: onnx.NodeProto, name: str, depth: int) -> Range:
        op, inputs = node.op_type, list(node.input)
        if node.domain not in ("", "ai.onnx"):
            return UNBOUNDED
        if op in ops.VALUE_SELECTIONS:
            moves_values = name == node.output[0] or op == "Split"  # not TopK's indices
            return _spread(self.of(inputs[0], depth)) if moves_values else UNBOUNDED
        ranges = [self.of(i, depth) if i else None for i in inputs]
        if op == "Cast":
            return _integral(ranges[0]) if _attr(node, "to") in _INTEGERS else ranges[0]
        if op == "Concat":
            return _concat(self.view, inputs, ranges, _attr(node, "axis", 0))
        if op in ops.ARITHMETIC and len(ranges) == 2:
            return _arithmetic(op, *ranges)
        if op == "Neg":
            return -ranges[0][1], -ranges[0][0]
        if op in _MONOTONE:
            f = _MONOTONE[op]
            return f(ranges[0][0]), f(ranges[0][1])
        if op in ops.EXTREMA:
            pick = np.maximum if op == "Max" else np.minimum
            lo, hi = ranges[0]
            for a, b in ranges[1:]:
                lo, hi = pick(lo, a), pick(hi, b)
            return lo, hi
        if op == "Clip":
            lo, hi = ranges[0]
            if len(ranges) > 1 and ranges[1] is not None:
                lo, hi = np.maximum(lo, ranges[1][0]), np.maximum(hi, ranges[1][1])
            if len(ranges) > 2 and ranges[2] is not None:
                lo, hi = np.minimum(lo, ranges[2][0]), np.minimum(hi, ranges[2][1])
            return lo, hi
        if op in ops.EXTREME_REDUCTIONS:
            return _spread(ranges[0])  # a max or min of values in [lo, hi] is in it too
        if op == "Where" and len(ranges) == 3:
            (a, b), (c, d) = ranges[1], ranges[2]
            return np.minimum(a.min(), c.min()), np.maximum(b.max(), d.max())
        return UNBOUNDED


def _producer(view: GraphView, name: str) -> onnx.NodeProto | None:
    """The node that computes `name`, in its own scope or one around it."""
    scope: GraphView | None = view
    while scope is not None:
        node = scope.producer(name)
        if node is not None:
            return node
        if scope.info(name) is not None and name in {i.name for i in scope.graph.input}:
            return None  # a formal input of this scope (a Loop's iteration): not followed
        scope = scope.parent
    return None


def _spread(r: Range) -> Range:
    """One range over all elements: what any element moved anywhere may hold."""
    return np.asarray(r[0].min()), np.asarray(r[1].max())


def _no_nan(r: Range) -> Range:
    """inf − inf or 0·inf (an unbounded operand) leaves that end unbounded."""
    lo, hi = r
    return np.where(np.isnan(lo), -np.inf, lo), np.where(np.isnan(hi), np.inf, hi)


def _integral(r: Range) -> Range:
    """Integers from values in [lo, hi] (truncated or rounded): in [floor lo, ceil hi]."""
    return np.floor(r[0]), np.ceil(r[1])


def _arithmetic(op: str, a: Range, b: Range) -> Range:
    """[a] op [b], each bound the extreme of the op on the ends (interval arithmetic)."""
    (a_lo, a_hi), (b_lo, b_hi) = a, b
    if op == "Add":
        return a_lo + b_lo, a_hi + b_hi
    if op == "Sub":
        return a_lo - b_hi, a_hi - b_lo
    if op == "Div":
        if np.any((b_lo <= 0) & (b_hi >= 0)):
            return UNBOUNDED
        b_lo, b_hi = 1 / b_hi, 1 / b_lo
    with np.errstate(invalid="ignore"):  # 0·inf: nan, made unbounded by _no_nan
        ends = np.stack(np.broadcast_arrays(a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi))
    return _no_nan((ends.min(axis=0), ends.max(axis=0)))


def _concat(view: GraphView, inputs: list[str], ranges: list[Range], axis: int) -> Range:
    """Element by element where every part's shape is known; else one range over all."""
    infos = [view.info(i) for i in inputs]
    if all(info is not None and info.concrete and info.shape for info in infos):
        try:
            los = [np.broadcast_to(r[0], info.shape) for r, info in zip(ranges, infos)]
            his = [np.broadcast_to(r[1], info.shape) for r, info in zip(ranges, infos)]
            return np.concatenate(los, axis=axis), np.concatenate(his, axis=axis)
        except ValueError:
            pass
    return (np.asarray(min(r[0].min() for r in ranges)),
            np.asarray(max(r[1].max() for r in ranges)))


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default
