"""The `llm` section: serving costs of a causal LM as one self-contained HTML page.

A table of the phases; a decode step's FLOPs and bytes against the context length, and its
estimated time (compute-bound and memory-bound nodes apart); where the prefill's and a decode
step's estimated time goes, per op type.
"""

from __future__ import annotations

import time
from html import escape

import numpy as np

from onnxflops.formats import html_table
from onnxflops.html.page import _CSS, COMPUTE_BOUND, FLOPS, LATENCY, MEMORY_BOUND, _figure
from onnxflops.html.svg import Line, paired_bars, scatter
from onnxflops.serving.cache import layer_runs
from onnxflops.serving.serve import LlmReport, compute_dtype
from onnxflops.results import human

def llm_html(r: LlmReport) -> str:
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<title>{escape(r.model)}: serving costs</title><style>{_CSS}</style></head><body>",
             f"<h1>{escape(r.model)}: serving costs</h1>",
             f"<p class=\"notes\">Generated {time.strftime('%Y-%m-%d %H:%M:%S')} by onnxflops "
             f"llm. Batch {r.batch}, prompt {r.prompt}, generate {r.generate}; weights "
             f"{r.dtype} ({escape(r.dtype_from)}), activations and KV cache {r.kv_dtype}. "
             f"Params {human(r.params.total)} "
             f"total, {human(r.params.active)} active per token; KV cache at the end "
             f"{human(r.kv_cache_bytes, 'B')}"
             + (f"; recurrent state {human(r.state_bytes, 'B')}" if r.state_bytes else "")
             + ".</p>",
             html_table(["phase", "MACs", "FLOPs", "bytes read", "bytes written"],
                    [[name, human(c.macs), human(c.flops), human(c.bytes_read, "B"),
                      human(c.bytes_written, "B")] for name, c in r.phases()]),
             _kv_table(r),
             _estimate_table(r),
             "<div class=\"plots\">",
             _figure(_decode_cost_plot(r), "One decode step against the context (tokens in the "
                                           "KV cache): its FLOPs and the bytes it moves."),
             _figure(_decode_time_plot(r), f"One decode step's estimated time on "
                                           f"{r.hardware.name}: per node the slower of compute "
                                           "and memory, summed."),
             _figure(_op_time_plot(r), "Where the estimated time goes, per op type: the prefill "
                                       "beside the decode steps."),
             "</div></body></html>"]
    return "\n".join(parts)


def _kv_table(r: LlmReport) -> str:
    """The KV cache at the end of generation, its layers grouped by form (full, sliding,
    chunked, latent), each with what it holds."""
    return html_table(["KV cache", "layers", "positions held", "bytes per token per layer", "bytes",
                       "holds"],
                      [[kind, layer_runs(layers), str(positions),
                        human(per_token, "B"), human(size, "B"), note]
                       for kind, layers, positions, per_token, size, note in r.kv_kinds()],
                      left=2, note=True) if r.kv_layers else ""


def _estimate_table(r: LlmReport) -> str:
    e, hw = r.estimate, r.hardware
    return html_table(["hardware", "peak FLOP/s", "bandwidth", "prefill", "decode per step",
                   "tokens/s", "bound (prefill, decode)"],
                  [[hw.name, f"{human(hw.peak(compute_dtype(r.dtype)))} "
                             f"{hw.precision(compute_dtype(r.dtype))}",
                    human(hw.bandwidth_bytes_per_s, "B/s"), f"{e.prefill_s * 1e3:.4g} ms",
                    f"{e.decode_s_per_token * 1e3:.4g} ms", f"{e.tokens_per_s:,.0f}",
                    f"{e.bound['prefill']}, {e.bound['decode']}"]])


def _contexts(r: LlmReport) -> list[int]:
    """Powers of two from 1 to twice the context at the end of generation."""
    return [2 ** k for k in range(int(np.log2(2 * (r.prompt + r.generate))) + 1)]


def _decode_cost_plot(r: LlmReport) -> str:
    contexts = _contexts(r)
    steps = [r.decode_at(c) for c in contexts]
    lines = [Line([(c, float(s.flops)) for c, s in zip(contexts, steps)], FLOPS, "FLOPs"),
             Line([(c, float(s.bytes_read + s.bytes_written)) for c, s in zip(contexts, steps)],
                  LATENCY, "bytes moved", dashed=True)]
    return scatter([], "context (tokens in the KV cache)", "per decode step", lines=lines,
                   kind="llm-decode-cost", legend=[("FLOPs", FLOPS), ("bytes moved", LATENCY)])


def _decode_time_plot(r: LlmReport) -> str:
    contexts = np.array(_contexts(r))
    timing = r.decode_phase.seconds(r.hardware, compute_dtype(r.dtype), batch=r.batch,
                                    context=contexts)
    ms = [("total", timing.seconds, "#333333", False),
          ("compute-bound nodes", timing.compute_bound_s, COMPUTE_BOUND, True),
          ("memory-bound nodes", timing.memory_bound_s, MEMORY_BOUND, True)]
    lines = [Line([(float(c), float(t) * 1e3) for c, t in zip(contexts, np.broadcast_to(
        values, contexts.shape))], color, label, dashed) for label, values, color, dashed in ms]
    return scatter([], "context (tokens in the KV cache)", "estimated ms per step", lines=lines,
                   kind="llm-decode-time", legend=[(label, color) for label, _, color, _ in ms])


def _op_time_plot(r: LlmReport) -> str:
    prefill, decode = r.estimate.by_op_type["prefill"], r.estimate.by_op_type["decode"]
    ops = sorted(set(prefill) | set(decode), key=lambda op: -(prefill.get(op, 0) +
                                                               decode.get(op, 0)))
    total_p, total_d = sum(prefill.values()) or 1.0, sum(decode.values()) or 1.0
    return paired_bars(ops, ("prefill time", [prefill.get(op, 0) / total_p for op in ops],
                             COMPUTE_BOUND),
                       ("decode time", [decode.get(op, 0) / total_d for op in ops], MEMORY_BOUND),
                       kind="llm-op-time", x_label="share of the phase's estimated time")
