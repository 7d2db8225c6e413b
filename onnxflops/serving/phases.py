"""One serving phase (prefill, or a decode step) counted once as formulas in its symbolic dims.

Each node keeps its MACs, FLOPs and bytes as formulas; the phase's totals, its bytes in the
serving dtypes and its roofline time are evaluated from them at any prompt or context length.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnxflops.dims import SYMBOL_MARK, to_expr
from onnxflops.ops import ALIASES, GATHERS, VIEWS

# Bits per element of each serving dtype (a graph's own dtypes do not matter: see Traffic).
DTYPE_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "int8": 8, "int4": 4}
# The weights' serving dtype where neither the user nor the model's config names one.
DEFAULT_DTYPE = "bf16"
# A transformer layer in a module path: model.layers.3.self_attn → layers.3 (h.3 in GPT-2).
_LAYER = re.compile(r"(?:^|\.)((?:layers|h|blocks|layer)\.\d+)(?:\.|$)")



def _vectorized(symbols, expr):
    """`expr` as a numpy function of `symbols`, Min and Max (a sliding window's keys) taken
    elementwise: older sympy writes them as numpy.amin of a tuple, which a mix of an array of
    contexts and a number cannot make."""
    import sympy

    expr = sympy.sympify(expr).replace(sympy.Min, sympy.Function("elementwise_min")) \
        .replace(sympy.Max, sympy.Function("elementwise_max"))
    return sympy.lambdify(symbols, expr, [{
        "elementwise_min": lambda *a: functools.reduce(np.minimum, a),
        "elementwise_max": lambda *a: functools.reduce(np.maximum, a)}, "numpy"])

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
    """How a graph's tensors are served: weights in one dtype, float activations and the KV cache
    in another, every other tensor (token ids, indices, masks) at its own size. Served bytes come
    from each tensor's elements, never from its bytes in the graph, which may hold its floats in
    any dtype (a model built in float32, bf16 or mixed)."""

    weight_bits: int
    activation_bits: int

    def weight_bytes(self, elements: Any) -> Any:
        """Bytes of `elements` weights served: elements × weight bits / 8."""
        from sympy import Rational

        return elements * Rational(self.weight_bits, 8)

    def tensor_bytes(self, info) -> Any:
        """Bytes of a tensor that is no weight, served: elements × activation bits / 8 for a
        float, its own bytes otherwise; 0 for a tensor whose shape is unknown (as counted)."""
        from sympy import Rational

        if info is None or not info.known:
            return 0
        return info.numel * Rational(self.activation_bits, 8) if info.is_float else info.nbytes


class Phase:
    """A counted graph (its report and analyzed model) as per-node formulas in `symbols`."""

    def __init__(self, counted, symbols: tuple[str, ...], traffic: Traffic,
                 experts_per_token: int = 0):
        """`experts_per_token`: the top-k of a mixture of experts, whose gathered expert weights
        are then read as the distinct experts its tokens touch (_expert_weight_bytes); 0: the
        rows gathered, at most the whole table."""
        import sympy

        self.report = counted.report
        # Params the graph holds, and those the framework had that no node reads.
        total = self.report.total
        self.params = int(total.params or 0) + int(getattr(total, "unused_params", 0) or 0)
        self.symbols = tuple(to_expr(SYMBOL_MARK + s) for s in symbols)
        protos = {n.name: n for n in counted.analyzed.model.graph.node}
        view = counted.analyzed.graph
        weights = {node.name: _weight_bytes(node, protos.get(node.name), view, traffic)
                   for node in self.report.nodes}
        fused = _gathered_weights(self.report.nodes, protos, weights)
        if experts_per_token:
            weights.update(_expert_weight_bytes(self.report.nodes, protos, view, weights, fused,
                                                experts_per_token))
        rows = []
        self.weight_reads: list[tuple[str, Any]] = []  # (block, bytes of weights read) per node
        for node in self.report.nodes:
            proto = protos.get(node.name)
            weight_read, _, names = weights[node.name]
            if proto is None:  # no tensors to serve apart (not a node of the graph's own list)
                read, written = node.bytes_read, node.bytes_written
            else:
                # A product reading weights a gather took (a token's experts) reads them in
                # place: the gather's rows are its weight reads, and nothing is written between.
                read = weight_read + sum(traffic.tensor_bytes(view.info(name))
                                         for name in proto.input
                                         if name and name not in names and name not in fused)
                written = 0 if proto.output[0] in fused else \
                    sum(traffic.tensor_bytes(view.info(name)) for name in proto.output if name)
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
        extended.params = self.params + (layers - 2) * (self.params - one.params)
        extended.totals = [(t2 + (layers - 2) * (t2 - t1)).expand()
                           for t1, t2 in zip(one.totals, self.totals)]
        return extended

    def summed(self, name: str, first: int, last: int, **values: Any) -> PhaseCost:
        """Σ of the phase's totals over `name` = first … last, the other symbols given: each
        step as `at` gives it (bytes rounded up per step), exactly (see sum_steps)."""
        subs = self._subs(values)
        symbol = next(s for s in self.symbols if s.name == name)
        return PhaseCost(*(sum_steps(t.subs(subs), symbol, first, last) for t in self.totals))

    def at(self, **values: Any) -> PhaseCost:
        """The phase's totals with its symbols given (ints: numbers; symbols: formulas)."""
        subs = self._subs(values)
        return PhaseCost(*(_number(t.subs(subs)) for t in self.totals))

    def seconds(self, hardware, compute_dtype: str, **values: Any) -> "Timing":
        """The roofline time of each node, max(flops / peak, bytes / bandwidth), summed, a view
        the runtime aliases (ALIASES: a Reshape, an Identity) moving no bytes; one of `values`
        may be an array (a time per element)."""
        peak, bandwidth = hardware.peak(compute_dtype), hardware.bandwidth_bytes_per_s
        names = [s.name for s in self.symbols]
        args = [np.asarray(values[n], dtype=np.float64) for n in names]
        total = compute = memory = 0.0
        by_op: dict[str, Any] = {}
        # Layers repeat: nodes of one op type with the same formulas are evaluated once.
        groups: dict[tuple, int] = {}
        for op, _, flops, read, written in self.rows:
            key = (op, flops, _moved(op, read, written))
            groups[key] = groups.get(key, 0) + 1
        for (op, flops, moved), count in groups.items():
            f = _vectorized(self.symbols, flops)(*args) if flops != 0 else 0.0
            # Whole bytes, as a phase's bytes are: 3 int4 weights take 2 (their 1.5 rounded up).
            b = np.ceil(_vectorized(self.symbols, moved)(*args)) if moved != 0 else 0.0
            t_compute, t_memory = np.asarray(f) / peak, np.asarray(b) / bandwidth
            t = np.maximum(t_compute, t_memory) * count
            total = total + t
            compute = compute + np.where(t_compute >= t_memory, t, 0.0)
            memory = memory + np.where(t_compute >= t_memory, 0.0, t)
            by_op[op] = by_op.get(op, 0.0) + t
        return Timing(total, compute, memory, by_op)

    def moved(self, **values: Any) -> Any:
        """Bytes the roofline charges the phase (seconds): Σ read + written over its nodes, a
        view the runtime aliases moving none."""
        subs = self._subs(values)
        return _number(sympy_subs(sum(_moved(op, read, written)
                                      for op, _, _, read, written in self.rows), subs))

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


def _moved(op: str, read: Any, written: Any) -> Any:
    """Bytes a node moves in the roofline: read + written; none for a view the runtime aliases
    (ALIASES: its output is its input's buffer)."""
    return 0 if op in ALIASES else read + written


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


def _weight_bytes(node, proto, view, traffic: Traffic) -> tuple[Any, Any, frozenset]:
    """(bytes of weights the node reads when served, bytes of those weights in full, their
    names): every constant float input, read in full, elements × weight bits / 8; but a gather
    (an embedding, a token's experts) reads only the rows it takes, at most its table."""
    if proto is None:
        return 0, 0, frozenset()
    names = [name for name in proto.input if _is_weight(view, name)]
    full = traffic.weight_bytes(sum(view.info(name).numel for name in names))
    if names and node.op_type in GATHERS and proto.input[0] == names[0]:
        import sympy

        rows = traffic.weight_bytes(view.info(proto.output[0]).numel)
        return sympy.Min(rows, full), full, frozenset(names)
    return full, full, frozenset(names)


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


def _gathered_weights(nodes, protos: dict, weights: dict) -> set[str]:
    """The tensors a gather takes from a weight for MatMuls to read (the experts' weights a token
    is routed to): the gather's output, and the outputs of the layout ops (a Transpose after an
    indexing) on its way to them, which move nothing in place."""
    consumers: dict[str, list] = {}
    for proto in protos.values():
        for name in proto.input:
            consumers.setdefault(name, []).append(proto)

    def to_products(name: str) -> list[str] | None:
        """`name` and the layout ops' outputs below it, if it ends in MatMuls only."""
        if not consumers.get(name):
            return None
        found = [name]
        for proto in consumers[name]:
            if proto.op_type == "MatMul":
                continue
            below = to_products(proto.output[0]) if proto.op_type in VIEWS else None
            if below is None:
                return None
            found += below
        return found

    fused = set()
    for n in nodes:
        proto = protos.get(n.name)
        if n.op_type in GATHERS and weights[n.name][1] and proto is not None:
            fused.update(to_products(proto.output[0]) or [])
    return fused


def _expert_weight_bytes(nodes, protos: dict, view, weights: dict, fused: set,
                         k: int) -> dict[str, tuple[Any, Any, frozenset]]:
    """Served bytes of each gather that takes a token's experts from a table of E experts (the
    gathers whose products read them in place, and those taking as many rows of a table of as
    many experts: their biases):

        E · (1 − (1 − k/E)^n) experts of the table's E, n = rows taken / k tokens,

    the expected number of distinct experts n tokens touch when each picks k of E uniformly (an
    expert is missed by a token with probability 1 − k/E, by all n with (1 − k/E)^n). It is k
    at one token and tends to E, below min(n·k, E): a decode step of B sequences reads
    E · (1 − (1 − k/E)^B) experts' weights, not k·B and not all E."""
    from sympy import Rational, sympify

    taken = {}  # gather → (experts in its table, rows it takes)
    for node in nodes:
        proto = protos.get(node.name)
        if node.op_type not in GATHERS or not weights[node.name][1] or proto is None \
                or _gather_axis(proto):
            continue
        table = view.info(proto.input[0])
        if table is not None and table.shape and isinstance(table.shape[0], int) \
                and table.shape[0] >= k:
            experts = table.shape[0]
            rows = sympify(view.info(proto.output[0]).numel) * experts / table.numel
            taken[node.name] = (experts, rows)
    experts_rows = {taken[n.name] for n in nodes
                    if n.name in taken and protos[n.name].output[0] in fused}
    served = {}
    for name, (experts, rows) in taken.items():
        if (experts, rows) in experts_rows:
            _, full, names = weights[name]
            served[name] = (full * (1 - (1 - Rational(k, experts)) ** (rows / k)), full, names)
    return served


def _gather_axis(proto) -> int:
    return next((a.i for a in proto.attribute if a.name == "axis"), 0)


def sum_steps(formula: Any, symbol: Any, first: int, last: int) -> Any:
    """Σ ⌈formula⌉ at symbol = first … last, exactly, for a formula piecewise polynomial in it
    (a decode step whose attention stops growing at a window: a·min(c, W) + b):

    the range is split where two arguments of a Min or Max cross (the integer part of each real
    root of their difference), each Min or Max resolved to the argument it takes on its part,
    and a part's polynomial summed in closed form (Faulhaber, via sympy) where it is integral at
    every integer (integer coefficients), else step by step; a formula of other symbols or of
    other functions (a floor that does not cancel, Piecewise) is summed step by step."""
    import sympy

    # A byte count rounds up a quotient that is often a polynomial: floor(1024(c + 1)²/(8c + 8)
    # + 7/8) is 128c + 128 once cancelled, which sympy does not do by itself.
    formula = sympy.sympify(formula).replace(
        lambda e: isinstance(e, (sympy.floor, sympy.ceiling)),
        lambda e: e.func(sympy.cancel(e.args[0])))
    if not formula.has(symbol):
        return _number(formula) * (last - first + 1) if formula.is_number else \
            formula * (last - first + 1)
    if formula.free_symbols != {symbol}:
        return sympy.Add(*(_number(formula.subs(symbol, c)) for c in range(first, last + 1)))
    total = 0
    for lo, hi, part in _pieces(formula, symbol, first, last):
        total += _sum_polynomial(part, symbol, lo, hi)
    return total


def _pieces(formula, symbol, first: int, last: int):
    """(lo, hi, formula without Min and Max on lo … hi) covering first … last; the formula as it
    is where a Min or Max compares what is not a polynomial in `symbol`."""
    import sympy

    innermost = [a for a in formula.atoms(sympy.Min, sympy.Max)
                 if not any(arg.has(sympy.Min, sympy.Max) for arg in a.args)]
    if not innermost:
        yield first, last, formula
        return
    cuts = set()
    for atom in innermost:
        for x, y in itertools.combinations(atom.args, 2):
            difference = sympy.expand(x - y)
            if not _rational_polynomial(difference, symbol):
                yield first, last, formula
                return
            if difference.has(symbol):
                for root in sympy.Poly(difference, symbol).real_roots():
                    cut = int(sympy.floor(root))
                    if first <= cut < last:
                        cuts.add(cut)
    bounds = [first - 1, *sorted(cuts), last]
    for lo, hi in zip((b + 1 for b in bounds), bounds[1:]):
        # No two arguments cross inside lo … hi but at hi, where they are equal: the argument
        # each takes at lo is the one it takes throughout.
        resolved = formula.xreplace({
            atom: (min if atom.func is sympy.Min else max)(
                atom.args, key=lambda arg: arg.subs(symbol, lo))
            for atom in innermost})
        yield from _pieces(resolved, symbol, lo, hi)


def _sum_polynomial(part, symbol, lo: int, hi: int) -> int:
    """Σ ⌈part⌉ over lo … hi: in closed form where `part` is a polynomial of integer
    coefficients, in exact integers step by step where they are fractions (bytes in int4), by
    substitution otherwise."""
    import sympy

    if not _rational_polynomial(part, symbol):
        return sum(_number(part.subs(symbol, c)) for c in range(lo, hi + 1))
    coefficients = sympy.Poly(part, symbol).all_coeffs()
    denominator = math.lcm(*(int(a.q) for a in coefficients))
    if denominator == 1:
        return int(sympy.summation(part, (symbol, lo, hi)))
    numerators = [int(a * denominator) for a in coefficients]
    total = 0
    for c in range(lo, hi + 1):
        value = 0
        for a in numerators:  # Horner
            value = value * c + a
        total += -(-value // denominator)
    return total


def _rational_polynomial(formula, symbol) -> bool:
    import sympy

    return formula.is_polynomial(symbol) and all(
        a.is_Rational for a in sympy.Poly(formula, symbol).all_coeffs())


def _number(value: Any) -> Any:
    """An int where a formula has become one, the formula otherwise; bytes round up."""
    if hasattr(value, "is_number") and value.is_number:
        return int(math.ceil(value))
    if isinstance(value, float):
        return int(math.ceil(value))
    return value


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float)) else str(value)
