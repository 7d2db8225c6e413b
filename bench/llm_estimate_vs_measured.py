"""The roofline estimate of `onnxflops.llm` against onnxruntime's measured latency, same graphs.

A small Llama (GQA) is exported once; its prefill and one decode step are estimated on this
machine's measured ceilings (`--hardware cpu`, float32 throughout, as onnxruntime's CPU provider
runs them) and then run under onnxruntime with the same shapes. The ratio measured / estimated
says how far a roofline is from reality: per-node max(flops/peak, bytes/bandwidth) assumes every
kernel reaches the machine's ceiling and no launch or framework overhead.
With `--provider cuda` (where a GPU is available) the same graphs run on the CUDA provider and
are compared with `--hardware` (default h100).

On CPU each phase is also profiled against the same measured ceilings: the model's share of the
peak, and the node that came nearest its roofline (% of roof, achieved over
min(peak, intensity × bandwidth)). A phase measured faster than its estimate (ratio < 1), or a
node above 100% of its roof, means a roof is too low; `profile` then probes again and, if still
beaten, raises the roof and says so in a note printed here. Timing-sensitive: run it under
`nice` on a quiet machine; the load average is printed before and after.

    python bench/llm_estimate_vs_measured.py [--prompt 256] [--context 256] [--batch 1]
        [--layers 4] [--hidden 512] [--provider cpu|cuda] [--hardware h100] [--runs 30]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def llama(layers: int, hidden: int, positions: int):
    """The bench's Llama (GQA, float32) of `layers` layers and width `hidden`, exported as the
    `llm` command exports it (prefill and decode graphs)."""
    from onnxflops.converters.causal_lm import causal_lm_to_onnx
    from onnxflops.converters.common import import_transformers

    transformers = import_transformers()
    config = transformers.LlamaConfig(
        num_hidden_layers=layers, hidden_size=hidden,
        intermediate_size=hidden * 8 // 3 // 64 * 64, num_attention_heads=hidden // 64,
        num_key_value_heads=max(1, hidden // 256), vocab_size=8192,
        max_position_embeddings=positions + 8)
    return causal_lm_to_onnx(transformers.LlamaForCausalLM(config))


def estimate_and_measure(prompt: int, context: int, batch: int, layers: int, hidden: int,
                         provider: str = "cpu", hardware: str | None = None, runs: int = 30):
    """(lm, the prefill's llm report, the decode step's, the prefill profiled, the decode step
    profiled): the roofline estimates first (on CPU: this machine's ceilings), then both graphs
    run under onnxruntime with the same shapes (on CPU against the same ceilings)."""
    import numpy as np

    from onnxflops.profiling import profile
    from onnxflops.serving import llm

    lm = llama(layers, hidden, max(prompt, context))
    hardware = hardware or ("cpu" if provider == "cpu" else "h100")
    dtype = "fp32" if provider == "cpu" else "bf16"
    r = llm(lm, prompt=prompt, generate=1, batch=batch, hardware=hardware, dtype=dtype)
    # generate=1: the one decode step runs at context = prompt; a second report for `context`.
    step = r if context == prompt else llm(lm, prompt=context, generate=1, batch=batch,
                                           hardware=hardware, dtype=dtype)
    ids = {"input_ids": np.zeros((batch, prompt), dtype=np.int64)}
    roofs = provider == "cpu"  # against the same measured ceilings as the estimate
    prefill = profile(lm.prefill, provider=provider, runs=runs, inputs=ids, ceilings=roofs)
    past = {vi.name: np.random.default_rng(0).standard_normal(
                [batch if d.dim_param == "batch" else context if d.dim_param == "context"
                 else d.dim_value for d in vi.type.tensor_type.shape.dim]).astype(np.float32)
            for vi in lm.decode.graph.input if vi.name.startswith("past_")}
    decode = profile(lm.decode, provider=provider, runs=runs,
                     inputs={"input_ids": np.zeros((batch, 1), dtype=np.int64), **past},
                     ceilings=roofs)
    return lm, r, step, prefill, decode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", type=int, default=256)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--provider", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--hardware", default=None)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    import os

    load_before = os.getloadavg()
    _, r, step, prefill, decode = estimate_and_measure(
        args.prompt, args.context, args.batch, args.layers, args.hidden, args.provider,
        args.hardware, args.runs)
    roofs = args.provider == "cpu"
    dtype = "fp32" if roofs else "bf16"
    print(f"{r.hardware.name}: peak {r.hardware.peak(dtype) / 1e9:.1f} GFLOP/s, "
          f"bandwidth {r.hardware.bandwidth_bytes_per_s / 1e9:.1f} GB/s; "
          f"Llama d={args.hidden}, {args.layers} layers, batch {args.batch}")
    print(f"{'phase':<28}{'estimate ms':>12}{'measured ms':>12}{'ratio':>8}")
    for label, estimate, measured in (
            (f"prefill ({args.prompt} tokens)", r.estimate.prefill_s, prefill.latency.median),
            (f"decode step (context {args.context})", step.estimate.decode_s_per_token,
             decode.latency.median)):
        print(f"{label:<28}{estimate * 1e3:>12.3f}{measured:>12.3f}"
              f"{measured / (estimate * 1e3):>8.2f}")
    if roofs:
        for label, p in (("prefill", prefill), ("decode step", decode)):
            c = p.ceilings
            nearest = max((n for n in p.nodes if n.bound != "-" and n.achieved_flops_per_s),
                          key=lambda n: n.achieved_flops_per_s / c.attainable(n.flops, n.bytes))
            share = nearest.achieved_flops_per_s / c.attainable(nearest.flops, nearest.bytes)
            print(f"{label}: {100 * p.efficiency:.1f}% of peak; nearest its roof: "
                  f"{nearest.name} ({nearest.op_type}) {100 * share:.1f}%")
            for w in p.warnings:
                if "roofs are raised" in w:
                    print(f"  note: {w}")
    print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f} "
          f"({os.cpu_count()} cpus)")


if __name__ == "__main__":
    main()
