"""Measure: how fast onnxruntime runs a model, and where the time goes against the counted FLOPs.

count → run untimed warm-ups and N timed runs with the profiler off (end-to-end latency) → run a
separate profiled session whose optimized graph is saved → join the trace's executed nodes to the
counted nodes (fusion.match) → scale the per-node times to the unprofiled latency → compare each
executed node with the machine's ceilings (roofline).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import onnx

from onnxflops import formats
from onnxflops.api import count_with_model
from onnxflops.bind.inputs import array_of, inputs_by_name, real_inputs
from onnxflops.errors import OnnxFlopsError
from onnxflops.load import load_model
from onnxflops.graph import GraphView
from onnxflops.normalize.functions import normalize as inline_functions
from onnxflops.ops import HOLDS_SUBGRAPHS
from onnxflops.profiling import budget, categories, fusion, sentences
from onnxflops.profiling.ceilings import (
    Ceilings,
    dominant_float_dtype,
    machine_ceilings,
    remember,
)
from onnxflops.profiling.runtime import (
    MAX_LOOP_TRIPS,
    Latency,
    SessionConfig,
    check_provider,
    check_run_counts,
    input_sizes,
    make_session,
    random_feeds,
    runnable,
    runner,
    time_runs,
)
from onnxflops.profiling.trace import END_TO_END_ONLY, NodeTimes, read_trace
from onnxflops.formats import Rows, Table, Text
from onnxflops.results import Report, human, modules_at_depth
from onnxflops.sources import Prepared, load, to_onnx, to_run

Progress = Callable[[str, float], None]


# A run above a roof probed longer ago than this probes the ceilings again (sooner, it raises
# the roofs for its own report only).
REPROBE_AFTER_SECONDS = 600

NOT_EXECUTED = "not executed: onnxruntime folded it to a constant or removed it at load time"
FOLDED_AT_EXPORT = ("folded at export: the deployed graph (the framework's own export) computes "
                    "it once as a constant or folds it into the node that kept its op (BatchNorm "
                    "into its conv)")


@dataclass
class MeasuredNode:
    """One executed node (or the few onnxruntime runs in its place) and the counted work it did."""
    name: str
    op_type: str
    original_nodes: list[str]
    layer: str
    flops: float
    bytes: int
    time_ms: float | None
    bound: str
    # The plain category of the counted work behind it (profiling.categories).
    category: str = categories.OTHER

    @property
    def achieved_flops_per_s(self) -> float | None:
        return _rate(self.flops, self.time_ms)

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte moved."""
        return self.flops / self.bytes if self.bytes else None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "op_type": self.op_type, "original_nodes": self.original_nodes,
                "flops": self.flops, "bytes": self.bytes, "time_ms": self.time_ms,
                "achieved_flops_per_s": self.achieved_flops_per_s, "bound": self.bound,
                "category": self.category}


@dataclass
class Rollup:
    """Executed nodes summed by op type or layer."""
    nodes: int = 0
    flops: float = 0
    bytes: int = 0
    time_ms: float = 0.0
    latency_share: float = 0.0
    flops_share: float = 0.0

    @property
    def achieved_flops_per_s(self) -> float | None:
        return _rate(self.flops, self.time_ms)

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "flops": self.flops, "bytes": self.bytes,
                "time_ms": self.time_ms, "latency_share": self.latency_share,
                "flops_share": self.flops_share, "achieved_flops_per_s": self.achieved_flops_per_s,
                "intensity": self.flops / self.bytes if self.bytes else None}


@dataclass
class Unattributed:
    name: str
    op_type: str
    flops: float
    reason: str


@dataclass
class Profile(formats.Rendered):
    """One model measured: latency, per executed node its time against its counted FLOPs.

    `to_text(top)`, `to_markdown`, `to_csv`, `to_json` write it (onnxflops.formats);
    `rows(by="node"|"op"|"layer")` and `to_pandas(by=...)` give its records."""
    model: str
    provider: str
    threads: int | None
    opt_level: str
    latency: Latency
    count: Report
    nodes: list[MeasuredNode]
    unattributed: list[Unattributed]
    ceilings: Ceilings | None
    timing: str  # how per-node times were obtained (see trace.py)
    warnings: list[str] = field(default_factory=list)

    @property
    def flops(self) -> float:
        return self.count.total.flops

    @property
    def achieved_flops_per_s(self) -> float | None:
        return _rate(self.flops, self.latency.median)

    @property
    def efficiency(self) -> float | None:
        """Achieved over peak FLOP/s, end to end."""
        if self.ceilings is None or self.achieved_flops_per_s is None:
            return None
        return self.achieved_flops_per_s / self.ceilings.peak_flops_per_s

    @property
    def unattributed_flops(self) -> float:
        return sum(u.flops for u in self.unattributed)

    def by_op_type(self) -> dict[str, Rollup]:
        return self._rollup(lambda n: n.op_type)

    def by_category(self) -> dict[str, Rollup]:
        """Executed nodes summed per plain category of their counted work, slowest first."""
        return self._rollup(lambda n: n.category)

    def summary(self) -> list[str]:
        """The model's sentences: latency, FLOPs, rate, where the time goes (sentences.py)."""
        return sentences.model_sentences(self)

    def by_layer(self, depth: int | None = None) -> dict[str, Rollup]:
        """Executed nodes summed per layer, slowest first; with `depth`, per module `depth`
        levels down the model, in the framework's names (as Report.by_layer)."""
        if depth is None:
            return self._rollup(lambda n: n.layer or "(top level)")
        at_depth = modules_at_depth({n.layer for n in self.nodes}, depth)
        return self._rollup(lambda n: at_depth[n.layer] or "(top level)")

    def _rollup(self, key: Callable[[MeasuredNode], str]) -> dict[str, Rollup]:
        groups: dict[str, Rollup] = {}
        for n in self.nodes:
            g = groups.setdefault(key(n), Rollup())
            g.nodes += 1
            g.flops += n.flops
            g.bytes += n.bytes
            g.time_ms += n.time_ms or 0.0
        total_time = sum(g.time_ms for g in groups.values())
        total_flops = sum(g.flops for g in groups.values())
        for g in groups.values():
            g.latency_share = g.time_ms / total_time if total_time else 0.0
            g.flops_share = g.flops / total_flops if total_flops else 0.0
        return dict(sorted(groups.items(), key=lambda kv: -kv[1].time_ms))

    def to_dict(self) -> dict[str, Any]:
        c = self.ceilings
        return {
            "summary": self.summary(),
            "latency_ms": self.latency.to_dict(),
            "flops": self.flops,
            "achieved_flops_per_s": self.achieved_flops_per_s,
            "peak_flops_per_s": c.peak_flops_per_s if c else None,
            "bandwidth_bytes_per_s": c.bandwidth_bytes_per_s if c else None,
            "provider": self.provider,
            "threads": self.threads,
            "opt_level": self.opt_level,
            "nodes": [n.to_dict() for n in self.nodes],
            "by_op_type": {k: v.to_dict() for k, v in self.by_op_type().items()},
            "by_category": {k: v.to_dict() for k, v in self.by_category().items()},
            "unattributed_flops": self.unattributed_flops,
            "warnings": list(self.warnings),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return formats.to_json(self, indent)

    def rows(self, by: str = "node", depth: int | None = None) -> Rows:
        """One record per executed node (the model's name first), or per op type, plain category
        or layer (`depth`: see by_layer) with its summed time and FLOPs, slowest first."""
        if by == "node":
            columns = ["model", "name", "op_type", "category", "original_nodes", "layer", "flops",
                       "bytes", "time_ms", "achieved_flops_per_s", "bound"]
            return Rows(columns, [{"model": self.model, **n.to_dict(), "layer": n.layer,
                                   "original_nodes": " ".join(n.original_nodes)}
                                  for n in self.nodes])
        if by not in ("op", "layer", "category"):
            raise ValueError(f"by={by!r}: one of node, op, layer, category")
        groups = self.by_op_type() if by == "op" else self.by_category() if by == "category" \
            else self.by_layer(depth)
        return Rows([by, *Rollup().to_dict()], [{by: k, **g.to_dict()} for k, g in groups.items()])

    def summary_lines(self) -> list[str]:
        """The model's sentences, then how it was measured."""
        return self.summary() + self.measurement_lines()

    def measurement_lines(self) -> list[str]:
        lat = self.latency.to_dict()
        lines = [f"{self.model}  provider={self.provider}  threads={self.threads or 'default'}  "
                 f"opt_level={self.opt_level}",
                 f"latency ms: median {lat['median']:.3f}  p90 {lat['p90']:.3f}  p99 "
                 f"{lat['p99']:.3f}  min {lat['min']:.3f}  max {lat['max']:.3f}  "
                 f"({lat['runs']} runs)",
                 f"FLOPs {human(self.flops)}  achieved {human(self.achieved_flops_per_s, 'FLOP/s')}"]
        if self.ceilings:
            c = self.ceilings
            lines[-1] += (f"  peak {human(c.peak_flops_per_s, 'FLOP/s')} "
                          f"({100 * self.efficiency:.1f}% of it)  bandwidth "
                          f"{human(c.bandwidth_bytes_per_s, 'B/s')}  ridge {c.ridge:.1f} FLOP/B"
                          + ("  [quick ceilings]" if c.quick else ""))
        lines.append(f"per-node times: {self.timing}")
        return lines

    def table_rows(self, limit: int | None = None) -> tuple[list[str], list[list[str]]]:
        header = ["node", "op", "FLOPs", "time ms", "latency %", "FLOPs %", "FLOP/s",
                  "% of roof", "FLOP/B", "bound"]
        total_time = sum(n.time_ms or 0.0 for n in self.nodes) or 1.0
        total_flops = sum(n.flops for n in self.nodes) or 1
        ranked = sorted(self.nodes, key=lambda n: -(n.time_ms or 0.0))[:limit]
        rows = [[n.name, n.op_type, human(n.flops), _ms(n.time_ms),
                 f"{100 * (n.time_ms or 0.0) / total_time:.1f}",
                 f"{100 * n.flops / total_flops:.1f}", human(n.achieved_flops_per_s),
                 self._of_roof(n), "-" if n.intensity is None else f"{n.intensity:.2f}", n.bound]
                for n in ranked]
        return header, rows

    def _of_roof(self, n: MeasuredNode) -> str:
        """Achieved FLOP/s as a share of what the roofline allows at the node's intensity."""
        if self.ceilings is None or not n.achieved_flops_per_s or n.bound == "-":
            return "-"
        return f"{100 * n.achieved_flops_per_s / self.ceilings.attainable(n.flops, n.bytes):.1f}"

    def view(self, top: int | None = 20) -> list:
        return [Text(self.summary_lines(), hard_breaks=True), "",
                Table(*self.table_rows(top), rules=True, closing_rule=False), *self.notes()]

    def to_text(self, top: int | None = 20) -> str:
        """The summary, then the `top` slowest executed nodes (None: all)."""
        return formats.to_text(self, top=top)

    def to_markdown(self, top: int | None = None) -> str:
        return formats.to_markdown(self, top=top)

    def to_csv(self, by: str = "node", depth: int | None = None) -> str:
        return formats.to_csv(self, by=by, depth=depth)

    def notes(self) -> list[str]:
        notes = [f"unattributed: {u.name} ({u.op_type}) {human(u.flops)} FLOPs: {u.reason}"
                 for u in self.unattributed if u.flops]
        notes += [f"note: {w}" for w in self.warnings]
        return ["", *notes] if notes else []


def profile(model, provider: str = "cpu", runs: int = 100, threads: int | None = None,
            inputs: Mapping[str, Any] | Sequence | None = None, *, batch: int | None = None,
            warmup: int = 10, profile_runs: int = 10, opt_level: str = "all",
            convention: str = "default", ceilings: bool = True, quick: bool = False,
            device_id: int = 0, progress: Progress | None = None,
            max_seconds: float | None = budget.DEFAULT_MAX_SECONDS,
            max_memory_gb: float | None = None, exporter: str = "dynamo",
            unsafe: bool = False, graph: str = "deployed") -> Profile:
    """Measure `model` under onnxruntime and join the measured times to the counted FLOPs.

    `inputs` as onnxflops.count takes them: by input name (a mapping) or in order, each a shape,
    a TypedShape, or an array or tensor (its dtype kept; fed as it is; other inputs get random
    data). `graph` picks what runs for a framework model (sources.to_run): "deployed" (default)
    the graph its framework's own export gives a user, with its weights, its times joined to the
    counted nodes of the structure graph; "counted" the very graph that was counted. An ONNX
    model runs as it is. `threads` sets onnxruntime's intra-op threads (None: its default, one
    per physical core); `opt_level` its graph optimization level (disable, basic, extended,
    layout, all).
    `ceilings` measures (once per machine, then cached) peak FLOP/s and bandwidth; `quick`
    measures them on small problems and makes fewer warm-up runs, for a fast rough answer.
    Before anything runs, what the profile will take is estimated from the count and refused in
    one line over `max_seconds` (None: no bound) or over the memory the process may use
    (`max_memory_gb` replaces the available RAM as that budget; see profiling.budget).
    A framework model is converted first (`exporter`, `unsafe`: as onnxflops.count takes them).
    """
    config = SessionConfig(provider, threads, opt_level, device_id)
    check_run_counts(runs=runs, warmup=warmup, profile_runs=profile_runs)
    check_provider(provider)
    step = progress or (lambda stage, fraction: None)
    step("counting", 0.0)
    source, ran = _sources(model, inputs, batch, exporter, unsafe, graph)
    counted = _count(source, inputs, batch, convention)
    deployed = ran.weighted() if ran is not source else None
    _check_loops(counted.report)
    warmup = min(warmup, 2) if quick else warmup
    need = budget.estimate(counted.report, counted.view, provider, runs=runs, warmup=warmup,
                           profile_runs=max(1, profile_runs),
                           feeds_bytes=sum(input_sizes(counted.bound).values()),
                           functions=counted.bound.functions)
    budget.check(need, max_seconds, None if max_memory_gb is None else int(max_memory_gb * 2**30))
    fed = deployed if deployed is not None else counted.bound
    given = inputs_by_name(inputs, [i.name for i in real_inputs(fed)])
    feeds = random_feeds(fed, {k: a for k, a in ((k, array_of(v)) for k, v in given.items())
                               if a is not None})
    # onnxruntime inlines local functions in time that grows as the square of their nodes
    # (minutes for 2^16); inlined here first by onnx (0.4 s for 2^16), it loads them as plain
    # nodes (2.3 s), up to budget.RUNTIME_MAX_INLINED_NODES.
    model_bytes = runnable(inline_functions(ran.weighted(),
                                            max_nodes=budget.RUNTIME_MAX_INLINED_NODES))

    step("timing", 0.0)
    session = make_session(model_bytes, config)
    latency = time_runs(runner(session, feeds, provider, device_id), runs, warmup,
                        lambda f: step("timing", f))
    del session

    step("profiling", 0.0)
    with tempfile.TemporaryDirectory(prefix="onnxflops-") as tmp:
        optimized_path = os.path.join(tmp, "optimized.onnx")
        session = make_session(model_bytes, config, profile_prefix=os.path.join(tmp, "trace"),
                               optimized_path=optimized_path)
        time_runs(runner(session, feeds, provider, device_id), max(1, profile_runs), warmup,
                  lambda f: step("profiling", f))
        times = read_trace(session.end_profiling(), skip_runs=warmup)
        optimized = onnx.load(optimized_path, load_external_data=False)
        del session

    step("ceilings", 0.0)
    dtype = dominant_float_dtype(counted.bound)
    machine = machine_ceilings(config, dtype, quick) if ceilings else None
    result = _join(counted, optimized.graph, times, latency, machine, deployed)
    if machine is not None and above_roof(result):
        # The cached ceilings were probed lower than this machine reaches now (other work then):
        # probe again, keeping the higher figures, unless they were probed minutes ago.
        probed = "probed again now"
        if not machine.probed_within(REPROBE_AFTER_SECONDS):
            machine = machine_ceilings(config, dtype, quick, refresh=True)
            result = _join(counted, optimized.graph, times, latency, machine, deployed)
        else:
            probed = f"probed at {machine.measured_at}"
        beaten = above_roof(result)
        if beaten:
            if machine.probed_under_load:
                probed += f", under load ({_load_text(machine)})"
            for flops, moved, seconds in beaten:
                machine = machine.raised_to(flops, moved, seconds)
            machine = remember(config, dtype, quick, machine)  # the next estimate's roofs too
            result = _join(counted, optimized.graph, times, latency, machine, deployed)
            result.warnings.append(
                f"{len(beaten)} node(s) or the model ran faster than the measured roofs "
                f"({probed}): the roofs are raised to what they reached (peak "
                f"{human(machine.peak_flops_per_s, 'FLOP/s')}, bandwidth "
                f"{human(machine.bandwidth_bytes_per_s, 'B/s')})")
    step("done", 1.0)
    result.provider, result.threads, result.opt_level = provider, config.threads, opt_level
    return result


def _load_text(c: Ceilings) -> str:
    if c.load_per_core is None or c.cpu_share is None:
        return "not recorded"
    return f"load average {c.load_per_core:.1f} per core, {100 * c.cpu_share:.0f}% of the CPU"


def above_roof(result: Profile) -> list[tuple[float, float, float]]:
    """(FLOPs, bytes, seconds) of the model, where it ran above the peak, and of each node that
    ran above the roofline at its arithmetic intensity."""
    c = result.ceilings
    if c is None:
        return []
    beaten = []
    # A rounding error's worth above (a roof just raised to a rate) is on the roof, not above.
    if result.achieved_flops_per_s and \
            result.achieved_flops_per_s > c.peak_flops_per_s * (1 + 1e-9):
        beaten.append((result.flops, 0, result.latency.median / 1e3))
    for n in result.nodes:
        if n.bound != "-" and n.achieved_flops_per_s and \
                n.achieved_flops_per_s > c.attainable(n.flops, n.bytes) * (1 + 1e-9):
            beaten.append((n.flops, n.bytes, n.time_ms / 1e3))
    return beaten


def _check_loops(report: Report) -> None:
    """Refuse, before running, a Loop that would run more than MAX_LOOP_TRIPS times a run."""
    for node in report.nodes:
        trips = (node.detail or {}).get("trip_count") if node.op_type == "Loop" else None
        if isinstance(trips, int) and trips > MAX_LOOP_TRIPS:
            raise OnnxFlopsError(f"node '{node.name or 'Loop'}' (Loop) would run {trips:,} times "
                                 f"a run, more than the {MAX_LOOP_TRIPS:,} profiling allows: bind "
                                 "a smaller trip count")


@dataclass
class _Counted:
    report: Report
    bound: onnx.ModelProto
    protos: list[onnx.NodeProto]  # the counted graph's node of each entry of report.nodes
    view: GraphView  # the counted graph
    bytes_of: Callable[[set[str]], int]
    graph_outputs: set[str]


def _sources(model, inputs, batch: int | None, exporter: str, unsafe: bool,
             graph: str) -> tuple[Prepared, Prepared]:
    """(what is counted, what runs): one graph, or the structure graph and the deployed one."""
    loaded = load(model, unsafe=unsafe)
    ran = to_run(loaded, inputs, graph=graph, batch=batch, exporter=exporter, unsafe=unsafe)
    if isinstance(ran.counted, str):
        load_model(ran.counted)  # one clear line for a missing or unreadable file
    if not ran.deployed:
        return ran, ran
    return to_onnx(loaded, inputs, batch=batch, exporter=exporter, unsafe=unsafe), ran


def _count(source: Prepared, inputs, batch: int | None, convention: str) -> _Counted:
    """The count as onnxflops.count makes it, keeping the counted graph's tensors."""
    counted = count_with_model(source.counted, None if source.converted else inputs,
                               None if source.converted else batch, convention)
    report, view = counted.report, counted.analyzed.graph
    report.model = source.name
    protos = _pair(report, list(view.nodes()))

    def bytes_of(tensors: set[str]) -> int:
        infos = [view.info(t) for t in tensors]
        return sum(i.nbytes for i in infos if i is not None and i.known)

    return _Counted(report, counted.bound, protos, view, bytes_of,
                    {o.name for o in view.graph.output})


def _pair(report: Report, graph_nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
    """The graph node behind each counted entry: entries follow graph order, constants skipped."""
    paired, k = [], 0
    for entry in report.nodes:
        while k < len(graph_nodes) and (graph_nodes[k].name, graph_nodes[k].op_type) != \
                (entry.name, entry.op_type):
            k += 1
        if k == len(graph_nodes):
            raise OnnxFlopsError(f"counted node '{entry.name}' ({entry.op_type}) is not in the "
                                 "counted graph")
        paired.append(graph_nodes[k])
        k += 1
    return paired


def _join(counted: _Counted, executed: onnx.GraphProto, times: NodeTimes, latency: Latency,
          machine: Ceilings | None, deployed: onnx.ModelProto | None = None) -> Profile:
    report = counted.report
    runs = list(executed.node)
    names = _trace_names(runs, times)
    measured_total_ms = sum(times.median_us.get(name, 0.0) for name in names) / 1e3
    scale = latency.median / measured_total_ms if measured_total_ms else 0.0
    consumers = fusion.consumers_of(counted.protos)
    nodes, unattributed = [], []
    for group in fusion.match(counted.protos, executed,
                              deployed.graph if deployed is not None else None):
        entries = [report.nodes[i] for i in group.counted]
        if not group.executed:
            reason = FOLDED_AT_EXPORT if deployed is not None and not group.deployed \
                else NOT_EXECUTED
            unattributed += [Unattributed(e.name, e.op_type, e.flops, reason) for e in entries]
            continue
        if deployed is not None:
            kept = _kept_at_export(entries, [deployed.graph.node[j] for j in group.deployed])
            unattributed += [Unattributed(e.name, e.op_type, e.flops, FOLDED_AT_EXPORT)
                             for e in entries if e not in kept]
            entries = kept
        done = [runs[j] for j in group.executed]
        done_names = [names[j] for j in group.executed]
        read, written = fusion.boundary(group.counted, counted.protos, consumers,
                                        counted.graph_outputs)
        flops = sum(e.flops for e in entries)
        moved = counted.bytes_of(read | written)
        time_ms = None
        if times.source != END_TO_END_ONLY:
            time_ms = sum(times.median_us.get(name, 0.0) for name in done_names) / 1e3 * scale
        main = max(entries, key=lambda e: e.flops, default=None)
        # A Loop's bytes are its inputs and outputs, not what its body moves at each step.
        bound = "-" if machine is None or any(e.op_type in HOLDS_SUBGRAPHS for e in entries) \
            else machine.bound(flops, moved)
        nodes.append(MeasuredNode(
            _joined(done_names), _op_label(done, entries),
            [e.name for e in entries], main.layer if main else "", flops, moved, time_ms, bound,
            categories.of_row(entries)))
    warnings = []
    if times.source == END_TO_END_ONLY:
        warnings.append("this onnxruntime build records no per-node CUDA kernel times (build it "
                        "with --enable_cuda_profiling for them): end-to-end latency only")
    elif measured_total_ms:
        warnings.append(f"per-node times are onnxruntime's profiled kernel times (median of "
                        f"{times.runs} profiled runs) scaled by {scale:.3f} so that they sum to "
                        f"the unprofiled median latency {latency.median:.3f} ms (they summed to "
                        f"{measured_total_ms:.3f} ms)")
    stray = sorted(set(times.median_us) - set(names))
    if stray:
        warnings.append(f"{len(stray)} profiled node(s) not in onnxruntime's optimized graph, "
                        f"left out: {', '.join(stray[:5])}")
    for reason, by_whom in ((NOT_EXECUTED, "onnxruntime folded them at load time"),
                            (FOLDED_AT_EXPORT, "the framework's export folded them")):
        flops = sum(u.flops for u in unattributed if u.reason == reason)
        if flops:
            warnings.append(f"{human(flops)} counted FLOPs are not executed at run time "
                            f"({by_whom})")
    return Profile(report.model, "", None, "", latency, report, nodes, unattributed, machine,
                   times.source, warnings + list(report.warnings))


def _kept_at_export(entries: list, deployed: list[onnx.NodeProto]) -> list:
    """The counted entries of a group whose op the deployed graph still runs there; where it runs
    some of them, the others were folded into those at export (BatchNorm into its conv, a zero
    bias dropped). Where it runs none of them (MatMul and Add exported as one Gemm), the work was
    rewritten, not folded: every entry is kept."""
    ops = {n.op_type for n in deployed}
    kept = [e for e in entries if e.op_type in ops]
    return kept if kept else entries


def _trace_names(runs: list[onnx.NodeProto], times: NodeTimes) -> list[str]:
    """The trace's name of each executed node. Nodes that onnxruntime makes while it loads the
    model (a Cast from a CastLike, ...) are named in the trace but saved without a name: those
    take, op type by op type and in execution order, the trace's names that the graph lacks."""
    named = {n.name for n in runs if n.name}
    spare: dict[str, list[str]] = {}
    for name, op_type in times.op_types.items():
        if name not in named:
            spare.setdefault(op_type, []).append(name)
    return [n.name or (spare.get(n.op_type) or [""]).pop(0) for n in runs]


def _joined(names: list[str], most: int = 3) -> str:
    """Names of the executed nodes standing for one group: a few in full, else the first."""
    return "+".join(names) if len(names) <= most else f"{names[0]}+{len(names) - 1} more"


def _op_label(done: list[onnx.NodeProto], entries: list) -> str:
    """The executed op types; where onnxruntime ran many kinds of node for what the counter saw
    as a few ops (LayerNorm or GELU left as arithmetic), those ops and the node count."""
    labels = list(dict.fromkeys(map(_label, done)))
    counted = list(dict.fromkeys(e.op_type for e in entries))
    if len(labels) <= 3 or not counted or len(counted) >= len(labels):
        return "+".join(labels)
    return f"{'+'.join(counted)} ({len(done)} nodes)"


def _label(node: onnx.NodeProto) -> str:
    """The executed op type as a reader knows it: NCHWc kernels and fused activations shown."""
    op = node.op_type
    if node.domain.endswith(".nchwc"):
        op = f"Nchwc{op}"
    activation = next((a.s.decode() for a in node.attribute if a.name == "activation"), None)
    return f"{op}({activation})" if activation else op


def _rate(flops: float, time_ms: float | None) -> float | None:
    return flops / (time_ms / 1e3) if time_ms else None


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
