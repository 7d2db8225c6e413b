"""The count's result: totals, per-node entries, and the views a user reads (op type, layer, category)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable

import onnx

from onnxflops.dims import format_shape
from onnxflops.report.layers import layer_of
from onnxflops.report.render import markdown_table, text_table

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
        return d


_NODE_KEYS = tuple("layer" if f.name == "layer_source" else f.name for f in fields(NodeReport)
                   if f.name not in ("detail", *BACKWARD))


@dataclass
class Uncosted:
    name: str
    op_type: str
    reason: str


@dataclass
class Report:
    model: str
    convention: str
    inputs: dict[str, list]
    total: Totals
    nodes: list[NodeReport]
    constant_work: Totals
    constant_nodes: int
    uncosted: list[Uncosted]
    warnings: list[str]

    @property
    def complete(self) -> bool:
        """Every node was costed: the totals are the whole model's."""
        return not self.uncosted

    def uncosted_summary(self, shown: int = 5) -> str:
        """One line: how many nodes are uncosted, the first few with why."""
        listed = "; ".join(f"'{u.name}' ({u.op_type}: {u.reason})" for u in self.uncosted[:shown])
        more = f"; and {len(self.uncosted) - shown} more" if len(self.uncosted) > shown else ""
        return (f"{self.model}: {len(self.uncosted)} node(s) uncosted, the totals exclude them: "
                f"{listed}{more}")

    def by_op_type(self) -> dict[str, Totals]:
        return self._group("op")[0]

    def by_layer(self) -> dict[str, Totals]:
        return self._group("layer")[0]

    def by_category(self) -> dict[str, Totals]:
        return self._group("category")[0]

    def _group(self, by: str) -> tuple[dict[str, Totals], dict[str, int]]:
        """Totals and node counts per group, in order of first appearance."""
        key = _GROUP_KEYS[by]
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "convention": self.convention,
            "inputs": self.inputs,
            "total": self.total.to_dict(),
            "by_op_type": _groups_dict(self.by_op_type()),
            "by_layer": _groups_dict(self.by_layer()),
            "by_category": _groups_dict(self.by_category()),
            "nodes": [n.to_dict() for n in self.nodes],
            "constant_work": {"nodes": self.constant_nodes, **self.constant_work.to_dict()},
            "uncosted": [asdict(u) for u in self.uncosted],
            "warnings": list(self.warnings),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The document; indented, each node, group and uncosted entry is one line of its own."""
        if indent is None:
            return json.dumps(self.to_dict())
        return _one_record_per_line(self.to_dict(), " " * indent)

    def to_csv(self) -> str:
        out = io.StringIO()
        backward = BACKWARD if self.total.backward_flops is not None else ()
        columns = ["name", "op_type", "layer", "category", *SUMMED, *backward, "input_shapes",
                   "output_shapes"]
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for n in self.nodes:
            row = n.to_dict()
            writer.writerow([_shapes_text(row[c]) if c.endswith("shapes") else row[c]
                             for c in columns])
        return out.getvalue()

    def to_markdown(self, by: str = "node") -> str:
        lines = markdown_table(*self._table(by))
        return "\n".join([self._summary(), "", *lines, *self._notes()]) + "\n"

    def to_table(self, by: str = "node") -> str:
        body = text_table(*self._table(by), rules=True)
        return "\n".join([self._summary(), "", *body, *self._notes()]) + "\n"

    def _table(self, by: str) -> tuple[list[str], list[list[str]]]:
        if by == "node":
            header = ["node", "op", "output shape", "MACs", "FLOPs", "params", "read", "written"]
            rows = [[n.name, n.op_type, _shapes_text(n.output_shapes), human(n.macs),
                     human(n.flops), human(n.params), human(n.bytes_read, "B"),
                     human(n.bytes_written, "B")] for n in self.nodes]
            entries: list = self.nodes
        else:
            groups, counts = self._group(by)
            header = [by, "nodes", "MACs", "FLOPs", "params", "read", "written"]
            rows = [[k or "(top level)", str(counts[k]), human(t.macs), human(t.flops),
                     human(t.params), human(t.bytes_read, "B"), human(t.bytes_written, "B")]
                    for k, t in groups.items()]
            entries = list(groups.values())
        t = self.total
        total_row = ["total", "", "", human(t.macs), human(t.flops), human(t.params),
                     human(t.bytes_read, "B"), human(t.bytes_written, "B")]
        if by != "node":
            total_row = ["total", str(len(self.nodes)), *total_row[3:]]
        rows.append(total_row)
        if t.backward_flops is not None:
            column = header.index("FLOPs") + 1
            header.insert(column, "backward FLOPs")
            for row, entry in zip(rows, [*entries, t]):
                row.insert(column, human(entry.backward_flops))
        return header, rows

    def _summary(self) -> str:
        t = self.total
        shapes = ", ".join(f"{k}={format_shape(v)}" for k, v in self.inputs.items())
        return (f"{self.model}  [{shapes}]  convention={self.convention}\n"
                f"MACs {human(t.macs)}  FLOPs {human(t.flops)}  int ops {human(t.int_ops)}  "
                f"params {human(t.params)}  buffers {human(t.buffers)}  "
                f"read {human(t.bytes_read, 'B')}  written {human(t.bytes_written, 'B')}"
                + ("" if t.backward_flops is None else
                   f"\ntraining: forward FLOPs {human(t.flops)}  backward FLOPs "
                   f"{human(t.backward_flops)} (MACs {human(t.backward_macs)})  "
                   f"total {human(t.training_flops)}"))

    def _notes(self) -> list[str]:
        notes = []
        if self.constant_nodes:
            notes.append(f"constant work (not counted): {self.constant_nodes} nodes, "
                         f"{human(self.constant_work.flops)} FLOPs, "
                         f"{human(self.constant_work.int_ops)} int ops")
        for u in self.uncosted:
            notes.append(f"UNCOSTED {u.name} ({u.op_type}): {u.reason}")
        notes += [f"warning: {w}" for w in self.warnings]
        return ["", *notes] if notes else []


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


def _one_record_per_line(doc: dict[str, Any], pad: str) -> str:
    """`doc` as JSON with one line per key, and one per record (dict) in a list or dict of them.

    Readable and greppable even for 50,000 nodes, and written by json's C encoder: an indented
    json.dumps runs the pure-Python one, five times slower.
    """
    def block(value: Any) -> str:
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            open_, records, close = "[", [json.dumps(v) for v in value], "]"
        elif isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            open_, records, close = "{", [f"{json.dumps(k)}: {json.dumps(v)}"
                                          for k, v in value.items()], "}"
        else:
            return json.dumps(value)
        return f"{open_}\n{pad * 2}" + f",\n{pad * 2}".join(records) + f"\n{pad}{close}"

    return "{\n" + ",\n".join(f"{pad}{json.dumps(k)}: {block(v)}" for k, v in doc.items()) + "\n}"


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
