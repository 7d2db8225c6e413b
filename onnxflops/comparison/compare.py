"""Two models side by side: does a port (Keras → PyTorch, one exporter → another) cost the same?

Totals, then per op type, then per layer aligned in execution order. Layers are aligned on what
they compute (MACs, params), not on their names, which frameworks spell differently; where one
framework splits a layer the other keeps whole (Keras's per-projection attention layers, PyTorch's
two-layer nn.LSTM), neighbouring layers are grouped until their sums agree. With check_outputs,
both models run under onnxruntime on the same random inputs and the largest output error is
reported — for ports whose weights were copied.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from onnxflops import formats
from onnxflops.api import count
from onnxflops.dims import format_shape
from onnxflops.errors import OnnxFlopsError
from onnxflops.formats import Rows, Table
from onnxflops.ops import RECURRENCES
from onnxflops.results import Report, Totals, human, layer_in_model
from onnxflops.sources import accepts, declared_inputs, frameworks_for, load, to_run

COMPARED = ("macs", "flops", "params", "buffers")
_PER_LAYER = ("macs", "params", "buffers")
SHOWN = COMPARED + ("bytes_read", "bytes_written")
_CHANNELS_LAST = {3: (0, 2, 1), 4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}


@dataclass
class Layer:
    """One layer of one model: its name, what it computes, the shape it produces."""

    name: str
    op_types: list[str]
    totals: Totals
    output_shape: list | None


@dataclass
class LayerRow:
    """Layers of `a` aligned with layers of `b` (either side may be empty)."""

    a: list[Layer]
    b: list[Layer]
    status: str  # same | regrouped | differs | missing | extra
    notes: list[str] = field(default_factory=list)


@dataclass
class OutputCheck:
    max_abs: float
    max_rel: float
    tolerance: float
    outputs: int
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.max_rel <= self.tolerance


@dataclass
class Comparison(formats.Rendered):
    """Two models' counts side by side. `to_text`, `to_json` (and onnxflops.formats) write it;
    `rows(by="total"|"op"|"layer")` and `to_pandas(by=...)` give its records."""
    a: Report
    b: Report
    tolerance: float
    by_op_type: dict[str, tuple[Totals, Totals]]
    layers: list[LayerRow]
    differences: list[str]
    outputs: OutputCheck | None = None

    @property
    def same(self) -> bool:
        """Totals within tolerance, no layer missing, extra or different, outputs close if checked."""
        return not self.differences and (self.outputs is None or self.outputs.ok)

    def to_dict(self) -> dict[str, Any]:
        return {
            "same": self.same, "tolerance": self.tolerance,
            "a": {"model": self.a.model, "total": self.a.total.to_dict(),
                  "foldable": self.a.foldable.to_dict()},
            "b": {"model": self.b.model, "total": self.b.total.to_dict(),
                  "foldable": self.b.foldable.to_dict()},
            "by_op_type": {k: {"a": ta.to_dict(), "b": tb.to_dict()}
                           for k, (ta, tb) in self.by_op_type.items()},
            "layers": [{"a": [x.name for x in row.a], "b": [x.name for x in row.b],
                        "status": row.status, "notes": row.notes} for row in self.layers],
            "differences": self.differences,
            "outputs": None if self.outputs is None else {
                "max_abs": self.outputs.max_abs, "max_rel": self.outputs.max_rel,
                "tolerance": self.outputs.tolerance, "outputs": self.outputs.outputs,
                "notes": self.outputs.notes},
        }

    def to_json(self, indent: int | None = 2) -> str:
        return formats.to_json(self, indent)

    def to_text(self) -> str:
        return formats.to_text(self)

    def rows(self, by: str = "layer") -> Rows:
        """Records of the totals (`by="total"`: one per quantity), the op types, or the layers
        aligned in execution order, each with a's and b's numbers."""
        if by == "total":
            return Rows(["quantity", "a", "b"], [
                {"quantity": k, "a": _plain(getattr(self.a.total, k)),
                 "b": _plain(getattr(self.b.total, k))} for k in SHOWN])
        if by == "op":
            return Rows(["op", *(f"{k}_{side}" for k in SHOWN for side in "ab")], [
                {"op": op, **{f"{k}_{side}": _plain(getattr(t, k)) for k in SHOWN
                              for side, t in (("a", ta), ("b", tb))}}
                for op, (ta, tb) in self.by_op_type.items()])
        if by != "layer":
            raise ValueError(f"by={by!r}: one of total, op, layer")
        records = []
        for row in self.layers:
            ta, tb = _sum(row.a), _sum(row.b)
            records.append({"a": _names(row.a), "b": _names(row.b), "status": row.status,
                            **{f"{k}_{side}": _plain(getattr(t, k)) if group else None
                               for k in _PER_LAYER + ("flops",)
                               for side, t, group in (("a", ta, row.a), ("b", tb, row.b))},
                            "notes": " ".join(row.notes)})
        return Rows(["a", "b", "status"], records)

    def view(self) -> list:
        blocks: list = [f"a: {self.a.model}", f"b: {self.b.model}", ""]
        blocks.append(Table(["", "a", "b", "b − a"],
                            [[key, *readable(getattr(self.a.total, key),
                                             getattr(self.b.total, key)),
                              _delta(getattr(self.a.total, key), getattr(self.b.total, key))]
                             for key in SHOWN]
                            # Work on weights alone, in the totals above: runtimes fold it.
                            + [[f"foldable {key}", *readable(getattr(self.a.foldable, key),
                                                             getattr(self.b.foldable, key)),
                                _delta(getattr(self.a.foldable, key),
                                       getattr(self.b.foldable, key))]
                               for key in ("macs", "flops")], left=1))
        blocks += ["", "by op type (FLOPs; ops that compute nothing left out)"]
        blocks.append(Table(["op", "a", "b", "b − a"],
                            [[op, human(ta.flops), human(tb.flops), _delta(ta.flops, tb.flops)]
                             for op, (ta, tb) in self.by_op_type.items()
                             if ta.flops or tb.flops], left=1))
        # Where the FLOPs totals differ, the rows show FLOPs too: MACs and params alone would
        # read "same" on every row of a gap in elementwise work.
        flops = self.a.total.flops != self.b.total.flops
        blocks += ["", f"layers in execution order (MACs{', FLOPs' if flops else ''}, params)"]
        blocks.append(Table(["a", "b", "MACs a", "MACs b",
                             *(["FLOPs a", "FLOPs b"] if flops else []),
                             "params a", "params b", ""],
                            [_layer_cells(row, flops) for row in self.layers], note=True))
        for row in self.layers:
            blocks += [f"  note: {note}" for note in row.notes]
        if self.outputs is not None:
            o = self.outputs
            blocks += ["", f"outputs: {o.outputs} compared, max abs error {o.max_abs:.3g}, "
                           f"max rel error {o.max_rel:.3g} (tolerance {o.tolerance:g})"]
            blocks += [f"  note: {note}" for note in o.notes]
        blocks += [""] + [f"DIFFERENT: {d}" for d in self.differences]
        if self.outputs is not None and not self.outputs.ok:
            blocks.append("DIFFERENT: outputs differ beyond the tolerance")
        if self.same:
            blocks.append(f"SAME: MACs, FLOPs ({self.a.convention}), params and buffers agree"
                          + (f" within {self.tolerance:g}" if self.tolerance else ""))
        return blocks


def compare(a, b, inputs: Mapping[str, Any] | None = None, tolerance: float = 0.0, *,
            inputs_a=None, inputs_b=None, batch: int | None = None, convention: str = "default",
            exporter: str = "dynamo", check_outputs: bool = False, output_tolerance: float = 1e-4,
            layout: str = "auto", unsafe: bool = False, seed: int = 0,
            graph: str = "deployed") -> Comparison:
    """Compare two models (any source `onnxflops.count` takes).

    `inputs` (name → shape) binds the inputs of whichever model has an input of that name;
    `inputs_a` / `inputs_b` bind one model only (any form its converter takes). `tolerance` is
    relative, on MACs, FLOPs, params and buffers. With `check_outputs`, both run under onnxruntime
    on the same random inputs; `layout` "auto" transposes channels-last ↔ channels-first inputs and
    outputs where the two models' shapes differ just so, "none" never does. `graph`: what runs
    for a framework model (onnxflops.sources.to_run): the graph its own export gives a user
    (default), or the counted one.
    """
    frameworks_for(a, b)
    sides = [_Side(a, inputs, inputs_a, unsafe), _Side(b, inputs, inputs_b, unsafe)]
    ra, rb = (count(s.model, inputs=s.bindings, batch=batch, convention=convention,
                    exporter=exporter, unsafe=unsafe) for s in sides)
    ops = sorted(set(ra.by_op_type()) | set(rb.by_op_type()))
    by_op = {op: (ra.by_op_type().get(op, Totals()), rb.by_op_type().get(op, Totals()))
             for op in ops}
    rows = align(layers_of(ra), layers_of(rb), tolerance)
    result = Comparison(ra, rb, tolerance, by_op, rows, _differences(ra, rb, rows, tolerance))
    if check_outputs:
        result.outputs = _check_outputs(sides, (ra, rb), batch, exporter, output_tolerance,
                                        layout, seed, graph)
    return result


def assert_same_cost(a, b, inputs: Mapping[str, Any] | None = None, tolerance: float = 0.0,
                     **options) -> Comparison:
    """For users' test suites: raise AssertionError with the comparison when `a` and `b` differ."""
    result = compare(a, b, inputs, tolerance, **options)
    if not result.same:
        raise AssertionError("models differ in cost:\n" + result.to_text())
    return result


class _Side:
    """One model as the user named it, loaded, with the input bindings that apply to it.

    A shared binding applies to a model with an input of that name that can take the shape, so
    `--input x=1x3x224x224` binds a PyTorch model's x and leaves a Keras x declared 224×224×3.
    """

    def __init__(self, source, shared: Mapping[str, Any] | None, own, unsafe: bool):
        self.model = load(source, unsafe=unsafe)
        declared = declared_inputs(self.model) if shared else {}
        picked = {k: v for k, v in (shared or {}).items()
                  if k in declared and accepts(declared[k], v)}
        if own is not None and not isinstance(own, Mapping):
            self.bindings = own
        else:
            self.bindings = {**picked, **(own or {})} or None


def layers_of(report: Report) -> list[Layer]:
    """Layers with work or weights, in the order they first run; TF scopes cut at the layer."""
    layers: dict[str, Layer] = {}
    for node in report.nodes:
        name = layer_in_model(node.layer)
        layer = layers.setdefault(name, Layer(name, [], Totals(), None))
        layer.totals.add(node)
        layer.op_types.append(node.op_type)
        if node.output_shapes:
            layer.output_shape = node.output_shapes[0]
    return [x for x in layers.values() if x.totals.macs or x.totals.params or x.totals.buffers]


def _key(layer: Layer) -> tuple:
    return layer.totals.macs, layer.totals.params + layer.totals.buffers


def align(la: list[Layer], lb: list[Layer], tolerance: float = 0.0) -> list[LayerRow]:
    """Pair layers in execution order; unequal stretches are grouped until their sums agree."""
    matcher = difflib.SequenceMatcher(a=[_key(x) for x in la], b=[_key(x) for x in lb],
                                      autojunk=False)
    rows: list[LayerRow] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [_row([x], [y], tolerance) for x, y in zip(la[i1:i2], lb[j1:j2])]
        else:
            rows += _group(la[i1:i2], lb[j1:j2], tolerance)
    return rows


def _group(la: list[Layer], lb: list[Layer], tolerance: float) -> list[LayerRow]:
    rows, i, j = [], 0, 0
    while i < len(la) and j < len(lb):
        ga, gb = [la[i]], [lb[j]]
        i, j = i + 1, j + 1
        while _sum_key(ga) != _sum_key(gb):
            grow_a = _sum_key(ga) < _sum_key(gb)
            if grow_a and i < len(la):
                ga.append(la[i])
                i += 1
            elif not grow_a and j < len(lb):
                gb.append(lb[j])
                j += 1
            else:
                ga, gb = ga + la[i:], gb + lb[j:]
                i, j = len(la), len(lb)
                break
        rows.append(_row(ga, gb, tolerance))
    rows += [LayerRow([x], [], "missing") for x in la[i:]]
    rows += [LayerRow([], [y], "extra") for y in lb[j:]]
    return rows


def _sum_key(group: list[Layer]) -> tuple:
    return tuple(sum(k) for k in zip(*(_key(x) for x in group)))


def _row(ga: list[Layer], gb: list[Layer], tolerance: float) -> LayerRow:
    """A row's status comes from MACs, params and buffers; FLOPs are compared on the totals only,
    since frameworks attach activations to different layers (Dense(activation=...) vs nn.GELU)."""
    ta, tb = _sum(ga), _sum(gb)
    notes = []
    differs = [k for k in _PER_LAYER if not _close(getattr(ta, k), getattr(tb, k), tolerance)]
    if differs:
        notes.append(f"{_names(ga)} vs {_names(gb)}: " + ", ".join(
            f"{k} {' vs '.join(readable(getattr(ta, k), getattr(tb, k)))}" for k in differs)
            + _first_change(ga, gb))
        notes += _explain(ga, gb, ta, tb)
    status = "differs" if differs else ("same" if len(ga) == len(gb) == 1 else "regrouped")
    shape_a, shape_b = ga[-1].output_shape, gb[-1].output_shape
    if status == "same" and _reshaped(shape_a, shape_b):
        notes.append(f"{_names(ga)} vs {_names(gb)}: output shape {format_shape(shape_a)} vs "
                     f"{format_shape(shape_b)} (not a layout transpose of each other)")
    return LayerRow(ga, gb, status, notes)


def _reshaped(shape_a: list | None, shape_b: list | None) -> bool:
    """Two known output shapes that are not a layout transpose of each other."""
    return bool(shape_a and shape_b) and sorted(map(str, shape_a)) != sorted(map(str, shape_b))


def _first_change(ga: list[Layer], gb: list[Layer]) -> str:
    """Where a stretch of layers that differs changed: the first pair, in execution order, whose
    output shapes differ (a channel count changed there, and the next layer reads it), else whose
    MACs, params or buffers do; named with both output shapes."""
    pairs = list(zip(ga, gb))
    changed = next(((x, y) for x, y in pairs if _reshaped(x.output_shape, y.output_shape)),
                   None) or next(((x, y) for x, y in pairs if _key(x) != _key(y)), None)
    if changed is None:
        return ""
    x, y = changed
    name = _names([x]) if x.name == y.name else f"{_names([x])} vs {_names([y])}"
    shapes = " vs ".join(format_shape(s) if s else "?" for s in (x.output_shape, y.output_shape))
    return f"; first change at {name}: output {shapes}"


def _explain(ga: list[Layer], gb: list[Layer], ta: Totals, tb: Totals) -> list[str]:
    """Name the known framework differences behind a gap, so that it reads as real, not a bug."""
    ops = {op for x in ga + gb for op in x.op_types}
    if ops & RECURRENCES and ta.macs == tb.macs and ta.params != tb.params:
        return ["same matrix products; the gap is bias vectors: PyTorch's RNN/GRU/LSTM keep two "
                "per gate (b_ih and b_hh) where Keras LSTM, SimpleRNN and GRU(reset_after=False) "
                "keep one. It is a real difference in params and in bias-add FLOPs."]
    return []


def _differences(ra: Report, rb: Report, rows: list[LayerRow], tolerance: float) -> list[str]:
    found = [f"total {k}: {' vs '.join(readable(getattr(ra.total, k), getattr(rb.total, k)))}"
             for k in COMPARED if not _close(getattr(ra.total, k), getattr(rb.total, k), tolerance)]
    for row in rows:
        if row.status == "missing":
            found.append(f"layer {_names(row.a)} of a has no counterpart in b")
        elif row.status == "extra":
            found.append(f"layer {_names(row.b)} of b has no counterpart in a")
        elif row.status == "differs":
            found.append(row.notes[0])  # the numbers; the notes after it explain them
    for side, report in (("a", ra), ("b", rb)):
        if report.uncosted:
            found.append(f"{side} has {len(report.uncosted)} uncosted node(s): the totals exclude "
                         "them")
    return found


def readable(x, y) -> tuple[str, str]:
    """Two numbers that differ, shown so that they read as different: rounded (2.98 G) where
    that shows it, else exact integers ("2,981,234,688" and "2,981,234,944")."""
    a, b = human(x), human(y)
    if a != b or x == y or not all(isinstance(v, int) for v in (x, y)):
        return a, b
    return f"{x:,}", f"{y:,}"


def _plain(value: Any) -> Any:
    """A count as a record holds it: a number, or a formula's text."""
    return value if isinstance(value, (int, float)) or value is None else str(value)


def _close(x, y, tolerance: float) -> bool:
    return x == y or abs(x - y) <= tolerance * max(abs(x), abs(y))


def _sum(group: list[Layer]) -> Totals:
    total = Totals()
    for layer in group:
        total.add(layer.totals)
    return total


def _names(group: list[Layer]) -> str:
    return "+".join(x.name or "(top level)" for x in group) or "-"


def _delta(x, y) -> str:
    if x == y:
        return "0"
    gap = human(abs(y - x))
    if isinstance(x, int) and isinstance(y, int) and human(x) == human(y):
        gap = f"{abs(y - x):,}"  # the totals read alike rounded: the gap exactly
    return ("+" if y > x else "−") + gap


def _layer_cells(row: LayerRow, flops: bool = False) -> list[str]:
    """A row of the layer table; with `flops`, the FLOPs of each side and, where only they
    differ, the gap beside the status (a row's status is from MACs, params and buffers)."""
    ta, tb = _sum(row.a), _sum(row.b)
    status = row.status
    shown_flops = []
    if flops:
        shown_flops = [human(ta.flops) if row.a else "-", human(tb.flops) if row.b else "-"]
        if row.a and row.b and ta.flops != tb.flops and status in ("same", "regrouped"):
            status = f"{status} MACs; FLOPs {_delta(ta.flops, tb.flops)}"
    return [_names(row.a), _names(row.b), human(ta.macs) if row.a else "-",
            human(tb.macs) if row.b else "-", *shown_flops, human(ta.params) if row.a else "-",
            human(tb.params) if row.b else "-", status]


def _check_outputs(sides: list[_Side], reports: tuple[Report, Report], batch: int | None,
                   exporter: str, tolerance: float, layout: str, seed: int,
                   graph: str) -> OutputCheck:
    """Run both models with their real weights on the same random inputs under onnxruntime."""
    from onnxflops.profiling.runtime import SessionConfig, make_session, runnable

    sessions = []
    for side in sides:
        model = to_run(side.model, side.bindings, graph=graph, batch=batch,
                       exporter=exporter).weighted()
        sessions.append(make_session(runnable(model), SessionConfig("cpu")))
    notes: list[str] = []
    feeds_a = _random_feeds(sessions[0], reports[0], seed)
    feeds_b = _matching_feeds(sessions[1], reports[1], list(feeds_a.values()), layout, notes)
    out_a, out_b = sessions[0].run(None, feeds_a), sessions[1].run(None, feeds_b)
    if len(out_a) != len(out_b):
        raise OnnxFlopsError(f"the models have {len(out_a)} and {len(out_b)} outputs: cannot "
                             "compare them")
    max_abs = max_rel = 0.0
    for i, (x, y) in enumerate(zip(out_a, out_b)):
        y = _to_layout_of(x, y, layout, f"output {i}", notes)
        error = float(np.max(np.abs(x.astype(np.float64) - y))) if x.size else 0.0
        max_abs = max(max_abs, error)
        max_rel = max(max_rel, error / max(float(np.max(np.abs(y))), 1e-12) if y.size else 0.0)
    return OutputCheck(max_abs, max_rel, tolerance, len(out_a), notes)


def _random_feeds(session, report: Report, seed: int) -> dict[str, np.ndarray]:
    from onnxflops.profiling.runtime import random_arrays

    return random_arrays({arg.name: (report.inputs.get(arg.name)
                                     or [d if isinstance(d, int) else 1 for d in arg.shape],
                                     _numpy_type(arg.type))
                          for arg in session.get_inputs()}, seed)


def _matching_feeds(session, report: Report, values: list[np.ndarray], layout: str,
                    notes: list[str]) -> dict[str, np.ndarray]:
    args = session.get_inputs()
    if len(args) != len(values):
        raise OnnxFlopsError(f"the models take {len(values)} and {len(args)} inputs: cannot feed "
                             "them the same data")
    feeds = {}
    for arg, value in zip(args, values):
        shape = report.inputs.get(arg.name) or list(value.shape)
        feeds[arg.name] = _to_shape(value, list(shape), layout, arg.name, notes).astype(
            _numpy_type(arg.type))
    return feeds


def _to_shape(value: np.ndarray, shape: list, layout: str, what: str, notes: list[str]):
    if list(value.shape) == shape:
        return value
    perm = _CHANNELS_LAST.get(value.ndim)
    if layout == "auto" and perm is not None:
        if [value.shape[p] for p in perm] == shape:
            notes.append(f"{what}: fed channels-first data as channels-last (NCHW → NHWC)")
            return value.transpose(perm)
        inverse = list(np.argsort(perm))
        if [value.shape[p] for p in inverse] == shape:
            notes.append(f"{what}: fed channels-last data as channels-first (NHWC → NCHW)")
            return value.transpose(inverse)
    raise OnnxFlopsError(f"{what}: shape {list(value.shape)} in one model, {shape} in the other "
                         "(use --layout auto for NHWC/NCHW)")


def _to_layout_of(x: np.ndarray, y: np.ndarray, layout: str, what: str, notes: list[str]):
    """`y` in the layout of `x`, for comparing an NHWC output with an NCHW one."""
    return _to_shape(y, list(x.shape), layout, what, notes).astype(np.float64)


def _numpy_type(ort_type: str):
    name = ort_type[len("tensor("):-1] if ort_type.startswith("tensor(") else "float"
    return {"float": np.float32, "double": np.float64, "float16": np.float16,
            "int64": np.int64, "int32": np.int32, "bool": np.bool_}.get(name, np.float32)
