"""The count's result: totals, per-node entries, and the views a user reads (op type, layer, category)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable

import onnx

from onnxflops import formats
from onnxflops.dims import format_shape
from onnxflops.formats import Rows, Table
from onnxflops.results.layers import layer_of, modules_at_depth

# The one-screen summary: its width and how many op types it lists.
SUMMARY_WIDTH, SUMMARY_OP_TYPES = 78, 10
SUMMED = ("macs", "flops", "int_ops", "params", "buffers", "bytes_read", "bytes_written")
# Counted only for training, None otherwise: the backward pass (training FLOPs = flops + these).
BACKWARD = ("backward_macs", "backward_flops")


@dataclass(slots=True)
class Totals:
    macs: Any = 0
    flops: Any = 0
    int_ops: Any = 0
    params: Any = 0
    buffers: Any = 0
    bytes_read: Any = 0
    bytes_written: Any = 0
    backward_macs: Any = None
    backward_flops: Any = None
    # Parameters the framework holds that no node reads (a backbone's untied output embedding):
    # the model's, never a node's, so not summed from them; params + unused_params is the
    # framework's own parameter count.
    unused_params: Any = 0

    @property
    def training_flops(self) -> Any:
        """Forward plus backward FLOPs of one training step, or None when training is not counted."""
        return None if self.backward_flops is None else self.flops + self.backward_flops

    def add(self, other: "Totals | NodeReport") -> None:
        # Spelled out: this runs once per node for the total and for each grouping.
        self.macs += other.macs
        self.flops += other.flops
        self.int_ops += other.int_ops
        self.params += other.params
        self.buffers += other.buffers
        self.bytes_read += other.bytes_read
        self.bytes_written += other.bytes_written
        if other.backward_flops is not None:
            mine = (0, 0) if self.backward_flops is None else (self.backward_macs, self.backward_flops)
            self.backward_macs = other.backward_macs + mine[0]
            self.backward_flops = other.backward_flops + mine[1]

    def to_dict(self) -> dict[str, Any]:
        d = {k: _plain(getattr(self, k)) for k in SUMMED}
        if self.unused_params:
            d["unused_params"] = _plain(self.unused_params)
        if self.backward_flops is not None:
            d.update({k: _plain(getattr(self, k)) for k in BACKWARD},
                     training_flops=_plain(self.training_flops))
        return d


@dataclass(slots=True, repr=False)
class NodeReport:
    name: str
    op_type: str
    domain: str
    # The layer's name, or the node it is read from when first asked: a table by op type or
    # category never needs it, and reading 50,000 name scopes takes a while.
    layer_source: str | onnx.NodeProto = field(repr=False, compare=False)
    category: str
    macs: Any = 0
    flops: Any = 0
    int_ops: Any = 0
    params: Any = 0
    buffers: Any = 0
    bytes_read: Any = 0
    bytes_written: Any = 0
    input_shapes: list = field(default_factory=list)
    output_shapes: list = field(default_factory=list)
    detail: dict | None = None
    backward_macs: Any = None
    backward_flops: Any = None
    # Work on weights alone, counted in the totals; a runtime computes it once at load.
    foldable: bool = False
    # Counted at an upper bound: it reads (or makes) a size that depends on data.
    bound: bool = False

    @property
    def layer(self) -> str:
        if not isinstance(self.layer_source, str):
            self.layer_source = layer_of(self.layer_source)
        return self.layer_source

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={getattr(self, key)!r}"
                          for key in (*_NODE_KEYS, "detail", *BACKWARD))
        return f"NodeReport({shown})"

    def to_dict(self) -> dict[str, Any]:
        # Only the counts can be symbolic; shapes hold ints, symbol names and None already.
        d = {"name": self.name, "op_type": self.op_type, "domain": self.domain,
             "layer": self.layer, "category": self.category, "macs": self.macs,
             "flops": self.flops, "int_ops": self.int_ops, "params": self.params,
             "buffers": self.buffers, "bytes_read": self.bytes_read,
             "bytes_written": self.bytes_written, "input_shapes": self.input_shapes,
             "output_shapes": self.output_shapes}
        for key in SUMMED:
            if type(d[key]) is not int:  # ints, or symbolic formulas (spelled out: 50,000 nodes)
                d[key] = _plain(d[key])
        for key in BACKWARD:
            if getattr(self, key) is not None:
                d[key] = _plain(getattr(self, key))
        if self.detail:
            d["detail"] = _plain(self.detail)
        if self.foldable:
            d["foldable"] = True
        if self.bound:
            d["bound"] = True
        return d


_NODE_KEYS = tuple("layer" if f.name == "layer_source" else f.name for f in fields(NodeReport)
                   if f.name not in ("detail", "foldable", "bound", *BACKWARD))


@dataclass
class Uncosted:
    name: str
    op_type: str
    reason: str


@dataclass(repr=False)
class Report(formats.Rendered):
    """A model's count: `total`, one entry per node (`nodes`), and views of them.

    `print(report)` shows a one-screen summary; `by_op_type()`, `by_layer(depth=N)`,
    `by_category()` sum the nodes; `rows(by=...)` and `to_pandas(by=...)` give them as records;
    `to_table`, `to_markdown`, `to_csv`, `to_json` write them (onnxflops.formats).
    """
    model: str
    convention: str
    inputs: dict[str, list]
    total: Totals
    nodes: list[NodeReport]
    constant_work: Totals
    constant_nodes: int
    uncosted: list[Uncosted]
    warnings: list[str]
    # The nodes of `nodes` that work on weights or literal tables alone (see
    # analysis/constant_work.py), summed.
    foldable: Totals = field(default_factory=Totals)
    foldable_nodes: int = 0
    # Parameter → element count, for the framework's parameters no node reads (total.unused_params).
    unused: dict[str, int] = field(default_factory=dict)

    JSON_RECORDS_PER_LINE = True
    NOTEBOOK_VIEW = {"by": "op"}

    @property
    def complete(self) -> bool:
        """Every node was costed: the totals are the whole model's."""
        return not self.uncosted

    @property
    def routed_macs(self) -> Any:
        """MACs of the products that read weights gathered per token, or the parts of a split by
        data (a mixture of experts' routed experts: tokens × k over all experts, whatever the
        routing)."""
        return sum((n.macs for n in self.nodes if n.detail and n.detail.get("routed")), 0)

    def uncosted_summary(self, shown: int = 5) -> str:
        """One line: how many nodes are uncosted, the first few with why."""
        listed = "; ".join(f"'{u.name}' ({u.op_type}: {u.reason})" for u in self.uncosted[:shown])
        more = f"; and {len(self.uncosted) - shown} more" if len(self.uncosted) > shown else ""
        return (f"{self.model}: {len(self.uncosted)} node(s) uncosted, the totals exclude them: "
                f"{listed}{more}")

    def by_op_type(self) -> dict[str, Totals]:
        return self._group("op")[0]

    def by_layer(self, depth: int | None = None) -> dict[str, Totals]:
        """Totals per layer (the exporter's name scope). With `depth`, per module `depth` levels
        down the model's tree, named as the framework names it (`encoder.layer.0` at depth 3):
        each sums every node below it, like torchinfo's and fvcore's trees."""
        return self._group("layer", depth)[0]

    def by_category(self) -> dict[str, Totals]:
        return self._group("category")[0]

    def _group(self, by: str, depth: int | None = None) -> tuple[dict[str, Totals], dict[str, int]]:
        """Totals and node counts per group, in order of first appearance."""
        key = self._key(by, depth)
        groups: dict[str, Totals] = {}
        counts: dict[str, int] = {}
        for n in self.nodes:
            k = key(n)
            group = groups.get(k)
            if group is None:
                group = groups[k] = Totals()
                counts[k] = 0
            group.add(n)
            counts[k] += 1
        return groups, counts

    def _key(self, by: str, depth: int | None) -> Callable[[NodeReport], str]:
        if by not in _GROUP_KEYS:
            raise ValueError(f"by={by!r}: one of node, {', '.join(_GROUP_KEYS)}")
        if depth is None:
            return _GROUP_KEYS[by]
        if by != "layer":
            raise ValueError(f"depth={depth!r} sums layers: it goes with by='layer'")
        at_depth = modules_at_depth({n.layer for n in self.nodes}, depth)
        return lambda n: at_depth[n.layer]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "convention": self.convention,
            "inputs": self.inputs,
            "total": {**self.total.to_dict(), "unused_params": self.total.unused_params},
            "by_op_type": _groups_dict(self.by_op_type()),
            "by_layer": _groups_dict(self.by_layer()),
            "by_category": _groups_dict(self.by_category()),
            "nodes": [n.to_dict() for n in self.nodes],
            "constant_work": {"nodes": self.constant_nodes, **self.constant_work.to_dict()},
            "unused_params": dict(self.unused),
            "foldable": {"nodes": self.foldable_nodes, **self.foldable.to_dict()},
            "uncosted": [asdict(u) for u in self.uncosted],
            "warnings": list(self.warnings),
        }

    def rows(self, by: str = "node", depth: int | None = None) -> Rows:
        """One record per node (`by="node"`), or per op type, layer or category with its
        totals; the numbers are exact (ints, or formulas as text when symbolic)."""
        if by == "node":
            backward = list(BACKWARD) if self.total.backward_flops is not None else []
            records = [n.to_dict() for n in self.nodes]
            for r in records:
                r["input_shapes"] = _shapes_text(r["input_shapes"])
                r["output_shapes"] = _shapes_text(r["output_shapes"])
            columns = ["name", "op_type", "layer", "category", *SUMMED, *backward,
                       "input_shapes", "output_shapes"]
            return Rows(columns, records, hidden=("domain", "detail"))
        groups, counts = self._group(by, depth)
        records = [{by: k, "nodes": counts[k], **t.to_dict()} for k, t in groups.items()]
        return Rows([by, "nodes", *self.total.to_dict()], records)

    def to_json(self, indent: int | None = 2) -> str:
        """The document; indented, each node, group and uncosted entry is one line of its own."""
        return formats.to_json(self, indent)

    def to_csv(self, by: str = "node", depth: int | None = None) -> str:
        return formats.to_csv(self, by=by, depth=depth)

    def to_markdown(self, by: str = "node", depth: int | None = None) -> str:
        return formats.to_markdown(self, by=by, depth=depth)

    def to_table(self, by: str = "node", depth: int | None = None) -> str:
        """The summary line, a table with a row per `by` (node, op, layer, category) and a total
        row, then constant work, uncosted nodes and warnings."""
        return formats.to_text(self, by=by, depth=depth)

    def view(self, by: str = "node", depth: int | None = None) -> list:
        return [self._summary(), "", Table(*self._table(by, depth), rules=True), *self._notes()]

    def _table(self, by: str, depth: int | None = None) -> tuple[list[str], list[list[str]]]:
        if by == "node":
            header = ["node", "op", "output shape", "MACs", "FLOPs", "params", "read", "written"]
            rows = [[n.name, n.op_type, _shapes_text(n.output_shapes), human(n.macs),
                     human(n.flops), human(n.params), human(n.bytes_read, "B"),
                     human(n.bytes_written, "B")] for n in self.nodes]
            entries: list = self.nodes
        else:
            groups, counts = self._group(by, depth)
            # Layers read in execution order, the model's tree; op types and categories as
            # print(report) ranks them, largest share of the FLOPs first.
            ranked = list(groups.items()) if by == "layer" else _ranked(groups)
            header = [by, "nodes", "MACs", "FLOPs", SHARE, "params", "read", "written"]
            rows = [[k or "(top level)", str(counts[k]), human(t.macs), human(t.flops),
                     _share(t.flops, self.total.flops), human(t.params),
                     human(t.bytes_read, "B"), human(t.bytes_written, "B")] for k, t in ranked]
            entries = [t for _, t in ranked]
        t = self.total
        total_row = ["total", "", "", human(t.macs), human(t.flops), human(t.params),
                     human(t.bytes_read, "B"), human(t.bytes_written, "B")]
        if by != "node":
            total_row = ["total", str(len(self.nodes)), *total_row[3:5],
                         _share(t.flops, t.flops), *total_row[5:]]
        rows.append(total_row)
        if t.backward_flops is not None:
            column = header.index("FLOPs") + 1
            header.insert(column, "backward FLOPs")
            for row, entry in zip(rows, [*entries, t]):
                row.insert(column, human(entry.backward_flops))
        return header, rows

    def _summary(self) -> str:
        t = self.total
        return (f"{self.model}  [{self._inputs_text()}]  convention={self.convention}\n"
                f"MACs {human(t.macs)}  FLOPs {human(t.flops)}  int ops {human(t.int_ops)}  "
                f"params {human(t.params)}  "
                + (f"unused params {human(t.unused_params)}  " if t.unused_params else "")
                + f"buffers {human(t.buffers)}  "
                f"read {human(t.bytes_read, 'B')}  written {human(t.bytes_written, 'B')}"
                + ("" if t.backward_flops is None else
                   f"\ntraining: forward FLOPs {human(t.flops)}  backward FLOPs "
                   f"{human(t.backward_flops)} (MACs {human(t.backward_macs)})  "
                   f"total {human(t.training_flops)}"))

    def _inputs_text(self) -> str:
        return ", ".join(f"{k}={format_shape(v)}" for k, v in self.inputs.items())

    def _notes(self) -> list[str]:
        notes = []
        if self.foldable_nodes:
            notes.append(f"foldable (counted; a runtime computes it once at load): "
                         f"{self.foldable_nodes} nodes on weights or literal tables alone, "
                         f"{human(self.foldable.macs)} MACs, {human(self.foldable.flops)} FLOPs")
        if self.constant_nodes:
            notes.append(f"constant work (not counted): {self.constant_nodes} nodes, "
                         f"{human(self.constant_work.flops)} FLOPs, "
                         f"{human(self.constant_work.int_ops)} int ops")
        routed = [n for n in self.nodes if n.detail and n.detail.get("routed")]
        if routed:
            notes.append(f"routed: {human(self.routed_macs)} MACs in {len(routed)} products of "
                         "routed experts (tokens × k over all experts, "
                         "whatever the router chooses)")
        if self.unused:
            listed = ", ".join(f"{name} ({human(count)})" for name, count in
                               list(self.unused.items())[:_UNUSED_SHOWN])
            more = (f", and {len(self.unused) - _UNUSED_SHOWN} more"
                    if len(self.unused) > _UNUSED_SHOWN else "")
            notes.append(f"unused params (in parameters(), read by no node, left out of params): "
                         f"{human(self.total.unused_params)} in {len(self.unused)} tensor(s): "
                         f"{listed}{more}")
        for u in self.uncosted:
            notes.append(f"UNCOSTED {u.name} ({u.op_type}): {u.reason}")
        notes += [f"warning: {w}" for w in self.warnings]
        return ["", *notes] if notes else []

    def __repr__(self) -> str:
        t = self.total
        return (f"Report(model={self.model!r}, macs={t.macs!r}, flops={t.flops!r}, "
                f"params={t.params!r}, nodes={len(self.nodes)}, uncosted={len(self.uncosted)})")

    def __str__(self) -> str:
        return summary(self)


def summary(report: Report, top: int = SUMMARY_OP_TYPES) -> str:
    """One screen, as Keras's summary() and torchinfo show a model: the totals, the op types
    with the most FLOPs and their share, what was left uncosted, and where the tables are."""
    t = report.total
    ranked = _ranked(report.by_op_type())
    rows = [[op, human(g.macs), human(g.flops), _share(g.flops, t.flops), human(g.params)]
            for op, g in ranked[:top]]
    rule = "=" * SUMMARY_WIDTH
    lines = [rule, f"{report.model}  [{report._inputs_text()}]  convention={report.convention}",
             rule, *formats.text_table(["op type", "MACs", "FLOPs", SHARE, "params"], rows,
                                       left=1, rules=True, width=SUMMARY_WIDTH)[:-1]]
    if len(ranked) > top:
        lines.append(f"... and {len(ranked) - top} more op types (report.by_op_type())")
    lines += [rule,
              f"{'MACs':<16}{human(t.macs)}", f"{'FLOPs':<16}{human(t.flops)}",
              *([f"{'training FLOPs':<16}{human(t.training_flops)}"]
                if t.backward_flops is not None else []),
              f"{'params':<16}{human(t.params)}",
              *([f"{'unused params':<16}{human(t.unused_params)} in {len(report.unused)} "
                 "tensor(s) no node reads"] if t.unused_params else []),
              f"{'buffers':<16}{human(t.buffers)}",
              f"{'bytes read':<16}{human(t.bytes_read, 'B')}",
              f"{'bytes written':<16}{human(t.bytes_written, 'B')}",
              f"{'nodes':<16}{len(report.nodes)}"
              + (f" (and {report.constant_nodes} constant, not counted)"
                 if report.constant_nodes else ""),
              *([f"{'foldable':<16}{human(report.foldable.flops)} FLOPs on weights or literal "
                 f"tables alone, in the totals ({report.foldable_nodes} nodes a runtime computes "
                 "once)"]
                if report.foldable_nodes else []), rule]
    if report.uncosted:
        lines += [f"UNCOSTED: {len(report.uncosted)} node(s), the totals exclude them:",
                  *(f"  {u.name} ({u.op_type}): {u.reason}" for u in report.uncosted[:5])]
        if len(report.uncosted) > 5:
            lines.append(f"  ... and {len(report.uncosted) - 5} more (report.uncosted)")
    else:
        lines.append("every node costed")
    lines += [f"warning: {w}" for w in report.warnings[:3]]
    if len(report.warnings) > 3:
        lines.append(f"... and {len(report.warnings) - 3} more warnings (report.warnings)")
    lines += ["tables: report.to_table(by='node'|'op'|'layer'|'category'),",
              "        report.by_layer(depth=N), report.rows(by=...), report.to_pandas(by=...)"]
    return "\n".join(lines)


SHARE = "% FLOPs"


def _ranked(groups: dict[str, Totals]) -> list[tuple[str, Totals]]:
    """Groups by FLOPs, largest first: how print(report) and the table by op type list them."""
    return sorted(groups.items(), key=lambda kv: _sort_key(kv[1].flops), reverse=True)


def _share(flops: Any, total: Any) -> str:
    """flops / total as a percentage, '-' where either is a formula or the total is 0."""
    if not all(isinstance(v, (int, float)) for v in (flops, total)) or not total:
        return "-"
    return f"{100 * flops / total:.1f}%"


def _sort_key(value: Any) -> float:
    """Largest first; a symbolic count (a formula) sorts after every number."""
    return float(value) if isinstance(value, (int, float)) else float("-inf")


_UNUSED_SHOWN = 10  # unused parameters named in a table's notes; the JSON names them all


def human(value: Any, unit: str = "") -> str:
    """1234567 → '1.23 M'; bytes use the same decimal prefixes."""
    if not isinstance(value, (int, float)):
        return str(value)
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {prefix}{unit}"
    return f"{value:g}{(' ' + unit) if unit else ''}"


def _shapes_text(shapes: list) -> str:
    return ", ".join(format_shape(s) for s in shapes)


_GROUP_KEYS: dict[str, Callable[[NodeReport], str]] = {
    "op": lambda n: n.op_type if not n.domain else f"{n.domain}::{n.op_type}",
    "layer": lambda n: n.layer,
    "category": lambda n: n.category,
}


def _groups_dict(groups: dict[str, Totals]) -> dict[str, dict]:
    return {k: v.to_dict() for k, v in groups.items()}


_JSON_SCALARS = frozenset((bool, int, float, str, type(None)))


def _plain(value: Any) -> Any:
    """JSON-ready: ints stay ints, symbolic expressions become strings."""
    if type(value) in _JSON_SCALARS:
        return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "is_Integer") and value.is_Integer:
        return int(value)
    return str(value)
