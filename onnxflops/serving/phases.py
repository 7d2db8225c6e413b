"""One serving phase (prefill, or a decode step) counted once as formulas in its symbolic dims.

Each node keeps its MACs, FLOPs and bytes as formulas; the phase's totals, its bytes in the
serving dtypes and its roofline time are evaluated from them at any prompt or context length.
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnxflops.dims import SYMBOL_MARK, to_expr
from onnxflops.graph import dtype_bits

# Bits per element of each serving dtype; the graph itself is exported in float32.
DTYPE_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "int8": 8, "int4": 4}
# Gathers whose bytes read are the rows they take of a weight, not the whole table.
_GATHERS = frozenset({"Gather", "GatherND", "GatherElements"})
# A transformer layer in a module path: model.layers.3.self_attn → layers.3 (h.3 in GPT-2).
_LAYER = re.compile(r"(?:^|\.)((?:layers|h|blocks|layer)\.\d+)(?:\.|$)")


@dataclass
class PhaseCost:
    """What one phase costs: MACs and FLOPs, bytes read and written in the serving dtypes."""

    macs: Any
    flops: Any
    bytes_read: Any
    bytes_written: Any

    def to_dict(self) -> dict[str, Any]:
        return {"macs": _plain(self.macs), "flops": _plain(self.flops),
                "bytes_read": _plain(self.bytes_read), "bytes_written": _plain(self.bytes_written)}


@dataclass
class Traffic:
    """How the graph's float32 bytes become serving bytes: weights in one dtype, activations and
    the KV cache in another."""

    weight_bits: int
    activation_bits: int

    def scale(self, weight_bytes: Any, other_bytes: Any) -> Any:
        from sympy import Rational

        return (weight_bytes * Rational(self.weight_bits, 32)
                + other_bytes * Rational(self.activation_bits, 32))


class Phase:
    """A counted graph (its report and analyzed model) as per-node formulas in `symbols`."""

    def __init__(self, counted, symbols: tuple[str, ...], traffic: Traffic):
        import sympy

        self.report = counted.report
        self.symbols = tuple(to_expr(SYMBOL_MARK + s) for s in symbols)
        protos = {n.name: n for n in counted.analyzed.model.graph.node}
        view = counted.analyzed.graph
        weights = {node.name: _weight_bytes(node, protos.get(node.name), view)
                   for node in self.report.nodes}
        fused = _gathered_weights(self.report.nodes, protos, weights)
        rows = []
        self.weight_reads: list[tuple[str, Any]] = []  # (block, bytes of weights read) per node
        for node in self.report.nodes:
            proto = protos.get(node.name)
            served, counted_as_weight = weights[node.name]
            # A product reading weights a gather took (a token's experts) reads them in place:
            # the gather's rows are its weight reads, and nothing is written between them.
            gathered = sum(fused.get(i, 0) for i in proto.input) if proto is not None else 0
            weight_read = traffic.scale(served, 0)
            read = weight_read + traffic.scale(0, node.bytes_read - counted_as_weight - gathered)
            written = 0 if proto is not None and proto.output[0] in fused \
                else traffic.scale(0, node.bytes_written)
            rows.append((node.op_type, sympy.sympify(node.macs), sympy.sympify(node.flops),
                         sympy.sympify(read), sympy.sympify(written)))
            self.weight_reads.append((_block(node.layer), sympy.sympify(weight_read)))
        self.rows = rows
        self.inputs = self.report.inputs
        # The phase's totals as formulas, summed once: `at` substitutes into them.
        self.totals = [sympy.Add(*(r[k] for r in rows)) for k in (1, 2, 3, 4)]

    def extended(self, one: "Phase", layers: int) -> "Phase":
        """This phase, counted on a model cut to two alike decoder layers, extended to `layers`
        of them with the same phase counted on it cut to one: what the second layer adds (its
        nodes, its cache inputs) repeats once per further layer, so every total, every roofline
        time and every block's reads is one + (layers - 1) × (two - one), exactly.

        Raises LayersNotAlike where the one-layer count is not part of the two-layer one, or
        the second layer changed what another layer costs."""
        two_rows, one_rows = (Counter(zip(p.weight_reads, p.rows)) for p in (self, one))
        if one_rows - two_rows:  # a node of the one-layer graph costs otherwise with two
            raise LayersNotAlike("the one-layer graph is not part of the two-layer one")
        added = two_rows - one_rows
        second = {block for (block, _), _ in added if _LAYER.fullmatch(block)}
        if len(second) > 1 or any(_nth_layer(block, 2) == block for block in second):
            raise LayersNotAlike(f"a second layer changed the cost of {sorted(second)}")
        # The further layers' nodes go after the second layer's, as an export would place them.
        at = 1 + max((i for i, (block, _) in enumerate(self.weight_reads) if block in second),
                     default=len(self.rows) - 1)
        weight_reads, rows = [], []
        for index in range(2, layers):
            for ((block, weight), row), count in added.items():
                renamed = _nth_layer(block, index) if block in second else block
                weight_reads += [(renamed, weight)] * count
                rows += [row] * count
        extended = copy.copy(self)
        extended.weight_reads = self.weight_reads[:at] + weight_reads + self.weight_reads[at:]
        extended.rows = self.rows[:at] + rows + self.rows[at:]
        new_inputs = [name for name in self.inputs if name not in one.inputs]
        extended.inputs = {**self.inputs, **{_nth_layer(name, index, "_"): self.inputs[name]
                                             for index in range(2, layers)
                                             for name in new_inputs}}
        extended.totals = [(t2 + (layers - 2) * (t2 - t1)).expand()
                           for t1, t2 in zip(one.totals, self.totals)]
        return extended

    def at(self, **values: Any) -> PhaseCost:
        """The phase's totals with its symbols given (ints: numbers; symbols: formulas)."""
        subs = self._subs(values)
        return PhaseCost(*(_number(t.subs(subs)) for t in self.totals))

    def seconds(self, hardware, compute_dtype: str, **values: Any) -> "Timing":
        """The roofline time of each node, max(flops / peak, bytes / bandwidth), summed; one
        of `values` may be an array (a time per element)."""
        import sympy

        peak, bandwidth = hardware.peak(compute_dtype), hardware.bandwidth_bytes_per_s
        names = [s.name for s in self.symbols]
        args = [np.asarray(values[n], dtype=np.float64) for n in names]
        total = compute = memory = 0.0
        by_op: dict[str, Any] = {}
        # Layers repeat: nodes of one op type with the same formulas are evaluated once.
        groups: dict[tuple, int] = {}
        for op, _, flops, read, written in self.rows:
            key = (op, flops, read + written)
            groups[key] = groups.get(key, 0) + 1
        for (op, flops, moved), count in groups.items():
            f = sympy.lambdify(self.symbols, flops, "numpy")(*args) if flops != 0 else 0.0
            b = sympy.lambdify(self.symbols, moved, "numpy")(*args) if moved != 0 else 0.0
            t_compute, t_memory = np.asarray(f) / peak, np.asarray(b) / bandwidth
            t = np.maximum(t_compute, t_memory) * count
            total = total + t
            compute = compute + np.where(t_compute >= t_memory, t, 0.0)
            memory = memory + np.where(t_compute >= t_memory, 0.0, t)
            by_op[op] = by_op.get(op, 0.0) + t
        return Timing(total, compute, memory, by_op)

    def by_block(self, **values: Any) -> dict[str, dict[str, Any]]:
        """Bytes read per block (a transformer layer, the embedding, the head): weights, and the
        rest (activations, the KV cache), in order of first appearance."""
        subs = self._subs(values)
        blocks: dict[str, dict[str, Any]] = {}
        for (block, weight), row in zip(self.weight_reads, self.rows):
            entry = blocks.setdefault(block, {"weights": 0, "other": 0})
            entry["weights"] += weight
            entry["other"] += row[3] - weight
        return {block: {k: _number(sympy_subs(v, subs)) for k, v in entry.items()}
                for block, entry in blocks.items()}

    def _subs(self, values: dict[str, Any]) -> dict:
        return {s: values[s.name] for s in self.symbols if s.name in values}


class LayersNotAlike(ValueError):
    """Counts of a model cut to one and to two layers that do not extend to more layers."""


def _nth_layer(name: str, index: int, separator: str = ".") -> str:
    """'layers.1' → 'layers.{index}' ('past_key_1' → 'past_key_{index}' with separator '_')."""
    stem, _, last = name.rpartition(separator)
    return f"{stem}{separator}{index}" if last == "1" else name


@dataclass
class Timing:
    """Roofline seconds of a phase, with the share of compute-bound and memory-bound nodes."""

    seconds: Any
    compute_bound_s: Any
    memory_bound_s: Any
    by_op_type: dict[str, Any]

    @property
    def bound(self) -> str:
        return "compute" if np.sum(self.compute_bound_s) >= np.sum(self.memory_bound_s) \
            else "memory"


def _weight_bytes(node, proto, view) -> tuple[Any, int]:
    """Bytes of weights the node reads when served, and bytes of its counted reads that are
    those weights: every constant float input, read in full; but a gather (an embedding, a
    token's experts) counts its whole table and serving reads only the rows it takes."""
    if proto is None:
        return 0, 0
    weights = [view.info(name) for name in proto.input if _is_weight(view, name)]
    counted = sum(w.nbytes for w in weights)
    if weights and node.op_type in _GATHERS and proto.input[0] == weights[0].name:
        import sympy

        return sympy.Min(node.bytes_written, counted), counted
    return counted, counted


def _is_weight(view, name: str) -> bool:
    """A float tensor the model stores: an initializer, or one laid out anew (a transposed
    matrix); not a scalar (an epsilon, an exponent), nor a table computed from a smaller one
    (rotary cos/sin from the inverse frequencies)."""
    info = view.info(name) if name and view.holds_value(name) else None
    if info is None or not info.is_float or not info.concrete or info.numel <= 1:
        return False
    sources = [view.info(s) for s in view.weight_sources(name)]
    return bool(sources) and info.numel <= sum(s.numel for s in sources if s is not None
                                               and s.concrete)


def _block(layer: str) -> str:
    """A node's block: 'layers.3' for any module under a model's layer 3, else the last module
    name ('embed_tokens', 'norm', 'lm_head'), or '' outside modules."""
    match = _LAYER.search(layer)
    if match:
        return match.group(1)
    return layer.rsplit(".", 1)[-1] if layer else ""


def sympy_subs(value: Any, subs: dict) -> Any:
    return value.subs(subs) if hasattr(value, "subs") else value


def _gathered_weights(nodes, protos: dict, weights: dict) -> dict[str, Any]:
    """Bytes of each tensor a gather takes from a weight and a MatMul reads (the experts' weights
    a token is routed to), by name."""
    consumers: dict[str, set[str]] = {}
    for proto in protos.values():
        for name in proto.input:
            consumers.setdefault(name, set()).add(proto.op_type)
    return {protos[n.name].output[0]: n.bytes_written for n in nodes
            if n.op_type in _GATHERS and weights[n.name][1] and n.name in protos
            and consumers.get(protos[n.name].output[0]) == {"MatMul"}}


def _number(value: Any) -> Any:
    """An int where a formula has become one, the formula otherwise; bytes round up."""
    if hasattr(value, "is_number") and value.is_number:
        return int(math.ceil(value))
    if isinstance(value, float):
        return int(math.ceil(value))
    return value


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float)) else str(value)


def tensor_bytes(shape: list, dtype: int, bits: int | None = None, **values: Any) -> int:
    """Bytes of a tensor whose declared dims may name symbols, at `values`; `bits` per element
    overrides the dtype's."""
    numel = 1
    for d in shape:
        numel *= values[d] if isinstance(d, str) else d
    return (numel * (bits or dtype_bits(dtype)) + 7) // 8
