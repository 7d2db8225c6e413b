"""What a profile will ask of the machine, estimated from the count before anything runs.

`profile` refuses, in one line with the estimate, a model whose runs would take longer than
`max_seconds` or more memory than the process may use, before onnxruntime loads it: a capped
process then ends with exit 2, not a signal, and a Loop nest of 10^9 trips is refused, not run.

Time is a lower bound: the count's FLOPs and bytes at rates no machine of today beats, plus a
floor per node that runs (onnxruntime spends more than that on each, and each Loop or Scan trip
runs its body's nodes again), plus a floor per event of the profiled session's trace.
Memory: the weights as often as profiling holds them at once, the largest node's inputs and
outputs, the random inputs, the profiled session's trace and onnxruntime's own.
"""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from onnxflops.analysis import mark_constants
from onnxflops.errors import OnnxFlopsError
from onnxflops.graph import GraphView, bodies
from onnxflops.profiling import runtime
from onnxflops.results import Report, human

DEFAULT_MAX_SECONDS = 600.0

# Rates above any machine of today, so that the time estimate stays below the real one: FLOP/s
# and bytes/s per provider (per core on CPU: 2 FMA units × 16 float32 lanes × 2 × 3 GHz).
_FASTEST = {"cpu": (200e9, 200e9), "cuda": (5e15, 10e12)}
# Seconds onnxruntime spends at least on each node it runs (0.6-1.3 µs measured on a Loop's
# body on a 2-core machine). Each node run of a profiled run is a trace event: 30 µs to record
# and 130 µs to read back measured there, and 7.4 KB at the peak (onnxruntime's record, then the
# JSON and its objects while read).
NODE_RUN_SECONDS = 0.1e-6
TRACE_EVENT_SECONDS = 50e-6
TRACE_EVENT_BYTES = 7 << 10
# The profile holds the weights about five times at once (peak RSS 3.0 GB profiling 0.6 GB of
# weights): the loaded model, its copy with every node named, serialized, and onnxruntime's.
WEIGHT_COPIES = 5
# onnxruntime's load of the nodes it inlines from local-function calls grows as their square:
# 0.70 CPU s for 4,096, 1.76 for 8,192, 6.6 for 16,384, 25.6 for 32,768 (onnxruntime 1.32, this
# 2-core machine; 65,536 ran past 30). About half the smallest n² coefficient (2.4e-8), so the
# estimate stays low: a 2^16 bomb is at least 54 s a session, a 2^18 one 859 s (the n^1.5 fit
# of the two smallest said 23 and 188, and both ran past 300 s under a 600 s budget). A profile
# loads the model in SESSIONS sessions (a check that it loads, the timed one, the profiled one).
INLINE_LOAD_COEFFICIENT = 1.25e-8
SESSIONS = 3
# Up to this many nodes, profile hands onnxruntime the functions inlined by onnx (0.4 CPU s for
# 2^16 nodes, 1.5 for 2^18), which it loads as plain nodes (2.3 and 16.6 CPU s, 280 MB and 960
# MB): no inlining of its own to estimate. Beyond, the calls stay calls and onnxruntime inlines
# them (INLINE_LOAD_COEFFICIENT).
RUNTIME_MAX_INLINED_NODES = 2**17
# onnxruntime's own: thread stacks and allocator arenas (address space, most of it untouched).
RUNTIME_BYTES = 256 << 20


@dataclass
class Estimate:
    seconds: float  # at least
    memory_bytes: int
    flops: float
    node_runs: int  # nodes onnxruntime runs in one run of the model, Loop and Scan trips included
    runs: int  # model runs the profile makes: warm-ups, timed and profiled
    weights_bytes: int
    largest_node: str  # the node whose inputs and outputs take the most memory
    largest_node_bytes: int
    trace_events: int
    unknown_trips: int  # Loops and Scans whose trip count is unknown, counted as one trip

    def describe(self) -> str:
        unknown = f", {self.unknown_trips} Loop/Scan trip count(s) unknown and taken as 1" \
            if self.unknown_trips else ""
        flops = human(self.flops) if self.flops < 1e18 else f"{self.flops:.1e}"
        return (f"{flops} FLOPs and {_many(self.node_runs)} node runs a run, "
                f"{self.runs:,} runs, {_many(self.trace_events)} trace events; weights "
                f"{_gib(self.weights_bytes)}, largest node '{self.largest_node}' "
                f"{_gib(self.largest_node_bytes)}{unknown}")


def estimate(report: Report, view: GraphView, provider: str, *, runs: int, warmup: int,
             profile_runs: int, feeds_bytes: int,
             functions: Sequence[onnx.FunctionProto] = ()) -> Estimate:
    """What profiling `report`'s model (its analyzed graph `view`; `functions`: the model's
    local functions, which onnxruntime inlines) will take: see the module."""
    node_runs, unknown = count_node_runs(view, inlined_sizes(functions))
    peak, bandwidth = _FASTEST[provider]
    if provider == "cpu":
        peak *= os.cpu_count() or 1
    total = report.total
    flops = _number(total.flops) + _number(total.int_ops)
    moved = _number(total.bytes_read) + _number(total.bytes_written)
    per_run = max(flops / peak, moved / bandwidth) + node_runs * NODE_RUN_SECONDS
    timed, profiled = warmup + runs, warmup + profile_runs
    events = node_runs * profiled
    largest = max(report.nodes, default=None,
                  key=lambda n: _number(n.bytes_read) + _number(n.bytes_written))
    largest_bytes = 0 if largest is None else \
        int(_number(largest.bytes_read) + _number(largest.bytes_written))
    weights = weights_bytes(view.graph)
    memory = WEIGHT_COPIES * weights + largest_bytes + feeds_bytes + RUNTIME_BYTES \
        + events * TRACE_EVENT_BYTES
    inlined = inlined_nodes(view.graph, inlined_sizes(functions))
    seconds = per_run * (timed + profiled) + events * TRACE_EVENT_SECONDS \
        + (SESSIONS * inline_load_seconds(inlined) if inlined > RUNTIME_MAX_INLINED_NODES else 0)
    return Estimate(seconds, memory, flops, node_runs, timed + profiled, weights,
                    _short(largest.name or largest.op_type) if largest else "-", largest_bytes,
                    events, unknown)


def _many(number: float) -> str:
    """`number` in digits with thousands separators; past 10^12 as 1.0e+106 (30 nested Loops
    multiply to 10^106 node runs, a line of a hundred digits)."""
    return f"{number:,.0f}" if number < 1e12 else f"{float(number):.1e}"


def check(need: Estimate, max_seconds: float | None = DEFAULT_MAX_SECONDS,
          max_memory_bytes: int | None = None) -> None:
    """Refuse in one line what would take longer than `max_seconds` (None: no bound) or more
    memory than the process may use; `max_memory_bytes` replaces the available RAM as the
    budget, never the hard limits (address space, data segment, cgroup)."""
    if max_seconds is not None and need.seconds > max_seconds:
        raise OnnxFlopsError(
            f"profiling would take at least {_many(need.seconds)} s ({need.describe()}), more than "
            f"the {max_seconds:,.0f} s budget: raise it with --max-seconds, or make fewer runs "
            "or bind smaller shapes")
    check_memory(need.memory_bytes, f"profiling would need about {_gib(need.memory_bytes)} "
                                    f"({need.describe()})", "or bind smaller shapes",
                 max_memory_bytes)


def check_memory(need_bytes: float, what: str, otherwise: str,
                 max_memory_bytes: int | None = None) -> None:
    """Refuse `need_bytes` over what the process may use, in one line: `what` it is, then the
    room and what limits it, then how to raise it and `otherwise`."""
    hard, hard_why = _hard_room()
    if max_memory_bytes is None:
        soft = runtime._available_memory()
        budgets = [(soft, f"available RAM {_gib(soft or 0)}", "raise it with --max-memory-gb")]
    else:
        budgets = [(max_memory_bytes, f"the --max-memory-gb budget {_gib(max_memory_bytes)}",
                    "raise it with --max-memory-gb")]
    budgets.append((hard, hard_why, "raise that limit"))
    room, why, remedy = min(((r, w, f) for r, w, f in budgets if r is not None),
                            default=(None, "", ""), key=lambda b: b[0])
    if room is not None and need_bytes > room:
        raise OnnxFlopsError(f"{what}, more than the {_gib(max(room, 0))} this process may use "
                             f"({why}): {remedy}, {otherwise}")


def inline_load_seconds(nodes: int) -> float:
    """seconds = INLINE_LOAD_COEFFICIENT · nodes²: onnxruntime's load of `nodes` nodes that it
    inlines from local-function calls, at least."""
    return INLINE_LOAD_COEFFICIENT * nodes ** 2


def inlined_nodes(graph: onnx.GraphProto, call_sizes: Mapping[tuple[str, str], int]) -> int:
    """Nodes onnxruntime makes by inlining the calls of local functions in `graph` and the
    graphs nested in it: Σ over calls of the called function's inlined size (each call once,
    whatever its Loop's trips)."""
    if not call_sizes:
        return 0
    total, stack = 0, [graph]
    while stack:
        for node in stack.pop().node:
            total += call_sizes.get((node.domain, node.op_type), 0)
            stack.extend(bodies(node))
    return total


def inlined_sizes(functions: Sequence[onnx.FunctionProto]) -> dict[tuple[str, str], int]:
    """size(f) = Σ over f's nodes of (size(g) where the node calls local function g, else 1):
    the nodes a call of each local function becomes once onnxruntime inlines it (2^24 for a
    function calling the one below twice, 24 levels deep). Recursion is refused before this."""
    by_key = {(f.domain, f.name): f for f in functions}
    sizes: dict[tuple[str, str], int] = {}

    def size(key: tuple[str, str]) -> int:
        if key not in sizes:
            sizes[key] = 1  # a call back into itself (refused elsewhere) ends here
            sizes[key] = sum(size((n.domain, n.op_type)) if (n.domain, n.op_type) in by_key
                             else 1 for n in by_key[key].node)
        return sizes[key]
    for key in by_key:
        size(key)
    return sizes


def count_node_runs(view: GraphView, call_sizes: Mapping[tuple[str, str], int] | None = None
                    ) -> tuple[int, int]:
    """Nodes onnxruntime runs in one run of the graph: each node once (a call of a local
    function: its body's nodes, `call_sizes`), a Loop's body its trip count times, a Scan's body
    once per scanned slice, the larger If branch; and how many trip counts were unknown (their
    body counted once). Iterative: nesting depth is the file's."""
    total, unknown = 0, 0
    call_sizes = call_sizes or {}
    stack: list[tuple[GraphView, int]] = [(view, 1)]
    while stack:
        scope, times = stack.pop()
        for node in scope.graph.node:
            total += times * call_sizes.get((node.domain, node.op_type), 1) if call_sizes \
                else times
            subgraphs = bodies(node)
            if not subgraphs:
                continue
            trips = _trips(node, scope)
            if trips is None:
                if node.op_type == "Loop" and _never_ends(node, scope):
                    raise OnnxFlopsError(
                        f"node '{node.name or node.op_type}' (Loop): no trip count, and a "
                        "condition that stays true (absent, or passed on unchanged by its body "
                        "from a true start): onnxruntime would run it forever, so it is not "
                        "profiled")
                unknown += 1
                trips = 1
            if node.op_type == "If":
                # Only one branch runs: the one with more nodes, a lower bound of either.
                subgraphs = [max(subgraphs, key=lambda g: len(g.node))]
            for body in subgraphs:
                inner = GraphView(body, parent=scope)
                mark_constants(inner)
                stack.append((inner, times * trips))
    return total, unknown


def _never_ends(node: onnx.NodeProto, scope: GraphView) -> bool:
    """A Loop without a trip count M whose condition never turns false: none given (the spec's
    endless loop), or true at the start and passed on by the body unchanged (its cond output the
    cond input, through Identity nodes) or as a constant true."""
    given = list(node.input) + ["", ""]
    if given[0]:
        return False
    if not given[1]:
        return True
    start = scope.value(given[1])
    if start is None or np.size(start) != 1 or not bool(np.asarray(start).reshape(())):
        return False
    body = next((a.g for a in node.attribute if a.name == "body"), None)
    if body is None or len(body.input) < 2 or not body.output:
        return False
    producers = {o: n for n in body.node for o in n.output}
    name, seen = body.output[0].name, set()
    while name in producers and name not in seen:
        seen.add(name)
        step = producers[name]
        if step.op_type == "Identity" and step.input:
            name = step.input[0]
        elif step.op_type == "Constant":
            value = next((a.t for a in step.attribute if a.name == "value"), None)
            held = onnx.numpy_helper.to_array(value) if value is not None else None
            return held is not None and held.size == 1 and bool(held.reshape(()))
        else:
            return False
    return name == body.input[1].name


def _trips(node: onnx.NodeProto, scope: GraphView) -> int | None:
    """How often the node runs its subgraph in one run of it, None when not known."""
    if node.op_type == "Loop":
        m = scope.value(node.input[0]) if node.input and node.input[0] else None
        if m is None or np.size(m) != 1 or not np.issubdtype(np.asarray(m).dtype, np.integer):
            return None
        return max(int(np.asarray(m).reshape(())), 0)
    if node.op_type == "Scan":
        scanned = next((a.i for a in node.attribute if a.name == "num_scan_inputs"), 0)
        axes = next((list(a.ints) for a in node.attribute if a.name == "scan_input_axes"), [0])
        first = len(node.input) - scanned
        info = scope.info(node.input[first]) if 0 <= first < len(node.input) else None
        if info is None or info.shape is None or not info.shape:
            return None
        dim = info.shape[(axes or [0])[0] % len(info.shape)]
        return dim if isinstance(dim, int) else None
    return 1


def weights_bytes(graph: onnx.GraphProto) -> int:
    """Bytes of the graph's initializers as declared (external data included), that is what
    onnxruntime allocates for them."""
    total = 0
    for t in graph.initializer:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type) \
            if t.data_type in onnx.helper.get_all_tensor_dtypes() else np.dtype(np.uint8)
        total += math.prod(max(d, 0) for d in t.dims) * dtype.itemsize
    return total


def _hard_room() -> tuple[int | None, str | None]:
    """Bytes this process may still take before a hard limit stops it, and which: the least of
    its address-space and data-segment limits (less what it uses) and its cgroup's memory.max."""
    status = _status()
    found: list[tuple[int, str]] = []
    for limit, used, label in ((resource.RLIMIT_AS, "VmSize", "address-space limit"),
                               (resource.RLIMIT_DATA, "VmData", "data-segment limit")):
        soft = resource.getrlimit(limit)[0]
        if soft != resource.RLIM_INFINITY:
            found.append((soft - status.get(used, 0), f"{label} {_gib(soft)}, "
                                                      f"{_gib(status.get(used, 0))} in use"))
    cgroup = _cgroup_room()
    if cgroup is not None:
        found.append(cgroup)
    return min(found) if found else (None, None)


def _status() -> dict[str, int]:
    """This process's VmSize and VmData in bytes (Linux; empty elsewhere)."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in lines
                                                     if line.startswith(("VmSize:", "VmData:")))}


def _cgroup_room() -> tuple[int, str] | None:
    """memory.max less memory.current of this process's cgroup (v2), or v1's limit less usage."""
    try:
        entries = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for entry in entries:
        _, controllers, path = entry.split(":", 2)
        root = Path("/sys/fs/cgroup")
        pairs = [(root / path.lstrip("/"), "memory.max", "memory.current")] if controllers == "" \
            else [(root / "memory" / path.lstrip("/"), "memory.limit_in_bytes",
                   "memory.usage_in_bytes")] if "memory" in controllers.split(",") else []
        for folder, limit_file, usage_file in pairs:
            try:
                limit = (folder / limit_file).read_text().strip()
                usage = int((folder / usage_file).read_text())
            except (OSError, ValueError):
                continue
            if limit.isdigit() and int(limit) < 1 << 60:
                return int(limit) - usage, f"cgroup memory limit {_gib(int(limit))}, " \
                                           f"{_gib(usage)} in use"
    return None


def _number(value) -> float:
    """A count as a number; a symbolic one (unbound dims) counts as 0 here."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _short(name: str, most: int = 60) -> str:
    return name if len(name) <= most else name[:most - 3] + "..."


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"
