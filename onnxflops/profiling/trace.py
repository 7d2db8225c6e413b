"""Per-node times from onnxruntime's JSON profile (a Chrome trace).

Node events are named `<node>_kernel_time`; each `model_run` session event spans one run. A Loop,
If or Scan event spans the events of its body's nodes: those are nested and not counted again.
GPU builds made with --enable_cuda_profiling add `Kernel` events after the node event that
launched them; only they time a CUDA node (its node event times the launch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from onnxflops.errors import OnnxFlopsError, first_line

_NODE_SUFFIX = "_kernel_time"

# How per-node times were obtained.
HOST_KERNELS = "kernel times on the host"
DEVICE_KERNELS = "CUDA kernel times"
END_TO_END_ONLY = "none: end-to-end latency only"


@dataclass
class NodeTimes:
    median_us: dict[str, float]  # executed node name → median over the runs of its time per run
    source: str
    runs: int
    op_types: dict[str, str]  # executed node name → op type, in the order the nodes first ran

    @property
    def total_us(self) -> float:
        return sum(self.median_us.values())


@dataclass
class _Event:
    node: str
    op_type: str
    ts: int
    dur: int
    tid: int
    on_host: bool
    device_us: float = 0.0

    @property
    def end(self) -> int:
        return self.ts + self.dur


def read_trace(path: str | Path, skip_runs: int = 0) -> NodeTimes:
    """Median per-run time of each top-level executed node, the first `skip_runs` runs left out
    (they ran while the session warmed up)."""
    try:
        events = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        # onnxruntime writes it where the run is: a full disk leaves it cut short
        raise OnnxFlopsError(f"{path}: onnxruntime's profile could not be read back (a full "
                             f"disk or an unwritable folder?): {first_line(e)}") from None
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("cat") == "Session" and e.get("name") == "model_run")
    nodes: list[_Event] = []
    saw_device = False
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith(_NODE_SUFFIX):
            args = e.get("args", {})
            nodes.append(_Event(e["name"][:-len(_NODE_SUFFIX)], args.get("op_name", ""), e["ts"],
                                e["dur"], e.get("tid", 0),
                                args.get("provider", "CPUExecutionProvider")
                                == "CPUExecutionProvider"))
        elif e.get("cat") == "Kernel" and nodes:
            saw_device = True
            parent = e.get("args", {}).get("parent_name")
            owner = next((n for n in reversed(nodes) if n.node == parent), nodes[-1])
            owner.device_us += e["dur"]
    top = _outermost(nodes)
    per_run: list[dict[str, float]] = [{} for _ in runs[skip_runs:]] or [{}]
    for event, outer in top:
        run = _run_index(runs, event.ts) - skip_runs if runs else 0
        if run < 0:
            continue
        own = event.dur if event.on_host else event.device_us
        times = per_run[run]
        times[outer.node] = times.get(outer.node, 0.0) + own
    op_types = {outer.node: outer.op_type for _, outer in sorted(top, key=lambda p: p[1].ts)}
    import statistics  # pulls in decimal and fractions: loaded when measuring, not at CLI start

    median = {name: statistics.median(run.get(name, 0.0) for run in per_run) for name in op_types}
    on_device = any(not e.on_host for e in nodes)
    source = DEVICE_KERNELS if saw_device else END_TO_END_ONLY if on_device else HOST_KERNELS
    if source == END_TO_END_ONLY:
        median = {}
    return NodeTimes(median, source, len(per_run), op_types)


def _outermost(events: list[_Event]) -> list[tuple[_Event, _Event]]:
    """Each event with the outermost event enclosing it on its thread (itself when top level).

    A nested event keeps its own time only where it ran on a device: the host time of the body's
    nodes is already inside the enclosing event's."""
    pairs = []
    open_by_thread: dict[int, _Event] = {}
    for event in sorted(events, key=lambda e: (e.tid, e.ts, -e.dur)):
        outer = open_by_thread.get(event.tid)
        if outer is not None and event.ts >= outer.ts and event.end <= outer.end:
            if not event.on_host:
                pairs.append((event, outer))
            continue
        open_by_thread[event.tid] = event
        pairs.append((event, event))
    return pairs


def _run_index(runs: list[tuple[int, int]], ts: int) -> int:
    for i, (start, end) in enumerate(runs):
        if start <= ts <= end:
            return i
    return len(runs) - 1
