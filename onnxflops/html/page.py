"""The report over one or more measured models: one self-contained HTML file (inline CSS and SVG,
no script, nothing fetched), and the same content as Markdown, JSON or CSV.

First the answer in words (profiling.sentences): per model its latency, FLOPs, rate and where the
time goes; per pair of models why the latency ratio is not the FLOPs ratio. Per model: a summary,
the share of latency beside the share of FLOPs per plain category of work, each executed node's
FLOPs against its time, and the roofline (achieved FLOP/s against arithmetic intensity under the
measured peak and bandwidth). For several models: latency against GFLOPs.
"""

from __future__ import annotations

import time
from html import escape
from typing import Sequence

from onnxflops import formats
from onnxflops.dims import format_shape
from onnxflops.formats import TABLE_CSS, Rows, html_table
from onnxflops.html.svg import Line, Point, paired_bars, scatter
from onnxflops.profiling.measure import Profile
from onnxflops.profiling.sentences import sentences
from onnxflops.results import human

COMPUTE_BOUND, MEMORY_BOUND, NO_FLOPS = "#1f77b4", "#d62728", "#8c8c8c"
LATENCY, FLOPS = "#ff7f0e", "#2ca02c"
ROOFLINE = "#9467bd"
MODEL_COLORS = ("#17becf", "#e377c2", "#8c564b", "#bcbd22", "#1f77b4", "#d62728", "#2ca02c",
                "#ff7f0e")
TOP_NODES = 30

_CSS = """
body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:36px;border-bottom:1px solid #ccc}
h3{font-size:15px}
.plots{display:flex;flex-wrap:wrap;gap:16px}.plots figure{margin:0}
figcaption{font-size:12px;color:#555;max-width:640px}.notes{font-size:12px;color:#555}
.answer p{font-size:15px;max-width:1000px;line-height:1.4}
""" + TABLE_CSS + "\n"


def to_html(profiles: Sequence[Profile], title: str = "onnxflops report") -> str:
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             "<div class=\"answer\">"
             + "".join(f"<p>{escape(s)}</p>" for s in sentences(profiles)) + "</div>",
             f"<p class=\"notes\">Generated {time.strftime('%Y-%m-%d %H:%M:%S')} by onnxflops. "
             "Latency is end to end, with onnxruntime's profiler off; per-node times come from "
             "a separate profiled session, scaled to that latency.</p>",
             html_table(*_summary_rows(profiles))]
    if len(profiles) > 1:
        parts.append(_figure(_models_plot(profiles), "Median latency against GFLOPs, one point "
                                                     "per model."))
    for p in profiles:
        parts.append(_model_section(p))
    parts.append("</body></html>")
    return "\n".join(parts)


class Profiles:
    """Several models' profiles as one result, for every output format (onnxflops.formats); the
    HTML page with its plots is `to_html`."""

    def __init__(self, profiles: Sequence[Profile], title: str = "onnxflops report"):
        self.profiles = list(profiles)
        self.model = title

    def to_dict(self) -> dict:
        return {"summary": sentences(self.profiles),
                "models": [{"model": p.model, **p.to_dict()} for p in self.profiles]}

    def rows(self, **_options) -> Rows:
        """Every model's executed nodes, one table (each row names its model)."""
        rows = [p.rows() for p in self.profiles]
        return Rows(rows[0].columns if rows else [], [r for each in rows for r in each])

    def view(self, **_options) -> list:
        blocks: list = ["# onnxflops report", "", formats.Text(sentences(self.profiles)), "",
                        formats.Table(*_summary_rows(self.profiles))]
        for p in self.profiles:
            blocks += ["", f"## {p.model}", "", p.to_markdown(TOP_NODES)]
        return blocks


def to_markdown(profiles: Sequence[Profile]) -> str:
    return formats.write(Profiles(profiles), "markdown")


def to_json(profiles: Sequence[Profile]) -> str:
    return formats.write(Profiles(profiles), "json")


def to_csv(profiles: Sequence[Profile]) -> str:
    return formats.write(Profiles(profiles), "csv") if profiles else ""


def _summary_rows(profiles: Sequence[Profile]) -> tuple[list[str], list[list[str]]]:
    header = ["model", "inputs", "FLOPs", "MACs", "params", "latency median ms", "p90 ms",
              "p99 ms", "achieved FLOP/s", "% of peak", "provider", "threads"]
    rows = []
    for p in profiles:
        lat = p.latency.to_dict()
        inputs = ", ".join(f"{k}={format_shape(v)}" for k, v in p.count.inputs.items())
        rows.append([p.model, inputs, human(p.flops), human(p.count.total.macs),
                     human(p.count.total.params), f"{lat['median']:.3f}", f"{lat['p90']:.3f}",
                     f"{lat['p99']:.3f}", human(p.achieved_flops_per_s),
                     "-" if p.efficiency is None else f"{100 * p.efficiency:.1f}", p.provider,
                     str(p.threads or "default")])
    return header, rows


def _model_section(p: Profile) -> str:
    rollup_header = ["nodes", "FLOPs", "time ms", "latency %", "FLOPs %", "FLOP/s", "FLOP/B"]
    node_header, node_rows = p.table_rows(TOP_NODES)
    plots = [_figure(_share_plot(p), "Share of latency beside share of FLOPs, per category of "
                                     "the counted work behind each executed node: a category "
                                     "whose latency share far exceeds its FLOPs share runs at a "
                                     "lower rate than the model's.")]
    if any(n.time_ms for n in p.nodes):
        plots.append(_figure(_nodes_plot(p), "Each executed node's FLOPs against its time; "
                                             "nodes without FLOPs are left out."))
        if p.ceilings is not None:
            plots.append(_figure(_roofline_plot(p), _roofline_caption(p)))
    notes = "".join(f"<li>{escape(n)}</li>" for n in p.notes() if n)
    return "\n".join([
        f"<h2>{escape(p.model)}</h2>",
        f"<p class=\"notes\">{'<br>'.join(escape(line) for line in p.measurement_lines())}</p>",
        f"<div class=\"plots\">{''.join(plots)}</div>",
        "<h3>By category of work</h3>",
        html_table(["category", *rollup_header], _rollup_rows(p.by_category())),
        "<h3>By op type (as executed)</h3>",
        html_table(["op type", *rollup_header], _rollup_rows(p.by_op_type())),
        f"<h3>By layer (top {TOP_NODES} by time)</h3>",
        html_table(["layer", *rollup_header], _rollup_rows(p.by_layer())[:TOP_NODES]),
        f"<h3>Slowest executed nodes (top {TOP_NODES})</h3>",
        html_table(node_header, node_rows, left=2),
        f"<ul class=\"notes\">{notes}</ul>" if notes else ""])


def _rollup_rows(groups: dict) -> list[list[str]]:
    return [[name, str(g.nodes), human(g.flops), f"{g.time_ms:.4f}",
             f"{100 * g.latency_share:.1f}", f"{100 * g.flops_share:.1f}",
             human(g.achieved_flops_per_s), "-" if not g.bytes else f"{g.flops / g.bytes:.2f}"]
            for name, g in groups.items()]


def _share_plot(p: Profile) -> str:
    groups = p.by_category()
    names = list(groups)
    return paired_bars(names, ("latency", [groups[n].latency_share for n in names], LATENCY),
                       ("FLOPs", [groups[n].flops_share for n in names], FLOPS),
                       kind="shares", x_label="share of the model's latency and FLOPs")


def _node_point(n, x: float, y: float) -> Point:
    color = COMPUTE_BOUND if n.bound == "compute" else MEMORY_BOUND if n.bound == "memory" \
        else NO_FLOPS
    return Point(x, y, color, f"{n.name} ({n.op_type}, {n.category}): {human(n.flops)} FLOPs, "
                              f"{n.time_ms:.4f} ms, {human(n.achieved_flops_per_s)} FLOP/s, "
                              f"{human(n.bytes, 'B')} moved, {n.bound}-bound")


def _nodes_plot(p: Profile) -> str:
    points = [_node_point(n, n.flops, n.time_ms) for n in p.nodes if n.flops and n.time_ms]
    return scatter(points, "FLOPs", "time (ms)", kind="nodes", legend=_bound_legend(p))


def _roofline_plot(p: Profile) -> str:
    c = p.ceilings
    points = [_node_point(n, n.flops / n.bytes, n.achieved_flops_per_s) for n in p.nodes
              if n.flops and n.bytes and n.time_ms]
    intensities = [pt.x for pt in points] or [c.ridge]
    low, high = min(min(intensities), c.ridge) / 4, max(max(intensities), c.ridge) * 4
    lines = [Line([(low, low * c.bandwidth_bytes_per_s), (c.ridge, c.peak_flops_per_s),
                   (high, c.peak_flops_per_s)], ROOFLINE,
                  f"roofline: peak {human(c.peak_flops_per_s, 'FLOP/s')}, bandwidth "
                  f"{human(c.bandwidth_bytes_per_s, 'B/s')}, ridge {c.ridge:.1f} FLOP/B")]
    return scatter(points, "arithmetic intensity (FLOPs per byte moved)", "achieved FLOP/s",
                   lines=lines, kind="roofline", legend=_bound_legend(p))


def _roofline_caption(p: Profile) -> str:
    c = p.ceilings
    return (f"Roofline: measured peak {human(c.peak_flops_per_s, 'FLOP/s')} (best of MatMul and "
            f"convolution probes) and "
            f"bandwidth {human(c.bandwidth_bytes_per_s, 'B/s')} (best of streaming a weight, "
            f"from cache where it fits, and a copy), {c.dtype}"
            + (", quick measurement" if c.quick else "") + ". Blue: compute-bound, red: "
            "memory-bound.")


def _bound_legend(p: Profile) -> list[tuple[str, str]]:
    return [("compute-bound", COMPUTE_BOUND), ("memory-bound", MEMORY_BOUND)] \
        if p.ceilings else []


def _models_plot(profiles: Sequence[Profile]) -> str:
    points = [Point(p.flops / 1e9, p.latency.median, MODEL_COLORS[i % len(MODEL_COLORS)],
                    f"{p.model}: {human(p.flops)} FLOPs, {p.latency.median:.3f} ms median",
                    p.model) for i, p in enumerate(profiles)]
    return scatter(points, "GFLOPs", "median latency (ms)", kind="models")


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"
