"""The range a tensor's values lie in, by interval arithmetic from the values the graph fixes.

A size read from data (a mask pasted at its box's size: Resize to sizes computed from box
coordinates) is unknown before a run, but the graph often fixes its range: the boxes were clipped
to the image, the mask's size is a constant. Each op's output range follows from its inputs'
(sound: every value a run can give lies in it, though it may be wider), through the layout ops,
arithmetic, Max/Min/Clip, extreme reductions and sums (n values summed), across the scopes a subgraph reads. What the graph does
not fix (a model input, an op not followed, a division by a range holding 0) is unbounded,
[-inf, inf], and what is computed from it too, unless a Clip, Max or Min bounds it again.
A sum or difference is also bounded as an affine form of the values it is computed from, where
operands that share a value cancel it (a box's corners about one centre: x1' − x0' is its width).
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Iterator

import numpy as np
import onnx

from onnxflops import ops
from onnxflops.graph import GraphView

Range = tuple[np.ndarray, np.ndarray]  # lowest and highest, broadcastable to the tensor's shape

_MONOTONE = {"Floor": np.floor, "Ceil": np.ceil, "Round": np.round, "Relu":
             lambda v: np.maximum(v, 0), "Sqrt": np.sqrt, "Exp": np.exp}
UNBOUNDED: Range = (np.asarray(-np.inf), np.asarray(np.inf))
_DEPTH = 300  # producers followed back at most: a range not found in as many is lost
_AFFINE_DEPTH = 40  # producers an affine form follows back: past them, a tensor is a leaf
_INTEGERS = frozenset({onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32,
                       onnx.TensorProto.INT64, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16,
                       onnx.TensorProto.UINT32, onnx.TensorProto.UINT64})


# While a subgraph is analysed as a model of its own (analyze.refine_subgraph), the ranges of the
# tensors it reads from the scopes around it, which are inputs there.
_AROUND: ContextVar["_Ranges | None"] = ContextVar("_AROUND", default=None)


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
    token = _AROUND.set(ranges)
    try:
        yield
    finally:
        _AROUND.reset(token)


class _Ranges:
    def __init__(self, view: GraphView):
        self.view = view
        self.around = _AROUND.get()
        self.found: dict[str, Range] = {}
        self.forms: dict[tuple, tuple | None] = {}  # affine forms by (name, picks): shared once

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
                found = self.around.of(name, _DEPTH) if self.around is not None else UNBOUNDED
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
            found = _arithmetic(op, *ranges)
            if op in ops.SHIFTS:  # a sum may cancel what its operands share: x1 − x0 of one box
                found = _tighter(found, self._affine_range(name, depth))
            return found
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
        if op == "ReduceSum":
            return self._sum(inputs[0], name, ranges[0])
        if op == "Where" and len(ranges) == 3:
            (a, b), (c, d) = ranges[1], ranges[2]
            return np.minimum(a.min(), c.min()), np.maximum(b.max(), d.max())
        return UNBOUNDED


    def _sum(self, reduced: str, name: str, r: Range) -> Range:
        """Σ of n values in [lo, hi] is in [n·lo, n·hi], n the elements summed into each output
        (the input's elements over the output's, both shapes known); unbounded where not known."""
        given, made = self.view.info(reduced), self.view.info(name)
        if given is None or made is None or not given.concrete or not made.concrete \
                or not made.numel or given.numel % made.numel:
            return UNBOUNDED
        n = given.numel // made.numel
        lo, hi = _spread(r)
        return (lo * n, hi * n) if n else (np.asarray(0.0), np.asarray(0.0))


    # Affine forms: a value as Σ c·leaf + constant (+ an error interval), where a leaf is a
    # tensor at fixed positions (a Gather by a constant, or by one loop index read twice), so
    # that a leaf both operands read cancels: (xc + w/2) − (xc − w/2) = w, where intervals give
    # |xc| + |w|. Selections are pushed down through Gather, Concat, Unsqueeze and casts.

    def _affine_range(self, name: str, depth: int) -> Range:
        form = self._affine(name, (), min(depth, _AFFINE_DEPTH))
        if form is None or not form[0] or (name, ()) in form[0]:  # nothing known past itself
            return UNBOUNDED
        terms, constant, (err_lo, err_hi) = form
        lo, hi = constant + err_lo, constant + err_hi
        for (leaf, picks), c in terms.items():
            if c == 0:
                continue
            a, b = self._picked(leaf, picks)
            lo, hi = lo + min(c * a, c * b), hi + max(c * a, c * b)
        return _no_nan((np.asarray(lo), np.asarray(hi)))

    def _picked(self, leaf: str, picks: tuple) -> tuple[float, float]:
        """[lo, hi] of `leaf` at the positions `picks` (axis, index) holds, spread to one range:
        a constant index picks its element's range where the range is per element."""
        info = self.view.info(leaf)
        if info is None and self.view.value(leaf) is None and self.around is not None:
            return self.around._picked(leaf, picks)  # a leaf of the scope around
        lo, hi = self.of(leaf, _DEPTH)
        rank = len(info.shape) if info is not None and info.shape is not None else None
        if lo.ndim and rank is not None and lo.ndim <= rank:
            lo = lo.reshape((1,) * (rank - lo.ndim) + lo.shape)
            hi = hi.reshape((1,) * (rank - hi.ndim) + hi.shape)
            for axis, index in sorted(picks, reverse=True):
                if isinstance(index, int) and axis < lo.ndim and lo.shape[axis] > 1 \
                        and -lo.shape[axis] <= index < lo.shape[axis]:
                    lo, hi = np.take(lo, index, axis), np.take(hi, index, axis)
        return float(np.min(lo)), float(np.max(hi))

    def _affine(self, name: str, picks: tuple, depth: int):
        """(terms {(leaf, picks): coefficient}, constant, error interval) of `name` at `picks`
        ((axis, index) pairs, an index an int or the name of a tensor read as one), or None."""
        picks = tuple(sorted(picks, key=str))  # one order: the same positions are one key
        if (name, picks) not in self.forms:  # a value read twice (a diamond) is followed once
            self.forms[name, picks] = self._affine_of(name, picks, depth)
        return self.forms[name, picks]

    def _affine_of(self, name: str, picks: tuple, depth: int):
        leaf = ({(name, picks): 1.0}, 0.0, (0.0, 0.0))
        scalar = self._scalar(name)
        if scalar is not None:
            return {}, scalar, (0.0, 0.0)
        if self.view.value(name) is not None:
            return leaf
        node = _producer(self.view, name)
        if node is None and self.around is not None and depth > 0:  # read from the scope around
            return self.around._affine(name, picks, depth - 1)
        if depth <= 0 or node is None or node.domain not in ("", "ai.onnx"):
            return leaf
        op, inputs = node.op_type, list(node.input)
        if op in ops.SHIFTS and len(inputs) == 2 and self._same_shape(name, inputs):
            a, b = (self._affine(i, picks, depth - 1) for i in inputs)
            return _combined(a, b, 1.0 if op == "Add" else -1.0) if a and b else leaf
        if op == "Neg" or op in ops.SCALINGS and len(inputs) == 2:
            scale = -1.0 if op == "Neg" else self._scalar(inputs[1])
            if scale is None or op == "Div" and scale == 0:
                return leaf
            scale = 1 / scale if op == "Div" else scale
            part = self._affine(inputs[0], picks, depth - 1) if self._same_shape(
                name, inputs[:1]) else None
            return _combined(({}, 0.0, (0.0, 0.0)), part, scale) if part else leaf
        if op in ops.TRACE_COPIES:
            part = self._affine(inputs[0], picks, depth - 1)
            if part is None or op == "Identity" or _attr(node, "to") not in _INTEGERS:
                return part or leaf
            return part[0], part[1], (part[2][0] - 1, part[2][1] + 1)  # trunc/round: ±1
        if op == "Gather" and len(inputs) == 2:
            index = self._index(inputs[1])
            axis = _attr(node, "axis", 0)
            if index is None or axis < 0:
                return leaf
            moved = tuple((a + 1 if a >= axis else a, i) for a, i in picks)
            return self._affine(inputs[0], moved + ((axis, index),), depth - 1) or leaf
        if op == "Unsqueeze" and len(inputs) == 2:
            axes = self.view.value(inputs[1])
            if axes is None or any(int(a) < 0 for a in np.ravel(axes)) \
                    or not all((int(a), 0) in picks for a in np.ravel(axes)):
                return leaf
            gone = sorted(int(a) for a in np.ravel(axes))
            kept = tuple((a - sum(g < a for g in gone), i) for a, i in picks if a not in gone)
            return self._affine(inputs[0], kept, depth - 1) or leaf
        if op == "Concat":
            axis = _attr(node, "axis", 0)
            index = dict(picks).get(axis)
            if not isinstance(index, int) or index < 0:
                return leaf
            for part in inputs:
                info = self.view.info(part)
                if info is None or not info.concrete or axis >= len(info.shape):
                    return leaf
                if index < info.shape[axis]:
                    rest = tuple(p for p in picks if p[0] != axis) + ((axis, index),)
                    return self._affine(part, rest, depth - 1) or leaf
                index -= info.shape[axis]
        return leaf

    def _same_shape(self, name: str, inputs: list[str]) -> bool:
        """Each operand is the output's shape (positions mean the same in both) or a scalar."""
        out = self.view.info(name)
        for i in inputs:
            value, info = self.view.value(i), self.view.info(i)
            if value is not None and value.size == 1:
                continue
            if out is None or info is None or not out.concrete or info.shape != out.shape:
                return False
        return True

    def _scalar(self, name: str) -> float | None:
        value = self.view.value(name)
        if value is None or value.size != 1 or not np.issubdtype(value.dtype, np.number):
            return None
        return float(value.reshape(-1)[0])

    def _index(self, name: str):
        """A Gather's index as a position: an int, or the name of a scalar tensor (one loop
        index read in two places is one position); None for a vector of indices."""
        value = self.view.value(name)
        if value is not None:
            return int(value) if value.ndim == 0 else None
        info = self.view.info(name)
        return name if info is not None and info.shape == () else None


def _combined(a, b, scale: float):
    """a + scale·b of two affine forms."""
    terms = dict(a[0])
    for key, c in b[0].items():
        terms[key] = terms.get(key, 0.0) + scale * c
    (a_lo, a_hi), (b_lo, b_hi) = a[2], b[2]
    err = (a_lo + min(scale * b_lo, scale * b_hi), a_hi + max(scale * b_lo, scale * b_hi))
    return terms, a[1] + scale * b[1], err


def _tighter(a: Range, b: Range) -> Range:
    """Both ranges hold every value: so does their intersection."""
    return np.maximum(a[0], b[0]), np.minimum(a[1], b[1])


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
