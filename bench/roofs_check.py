"""Are the measured ceilings ceilings? Each model and LLM phase against its roof, ending PASS/FAIL.

Runs, on CPU, what the roofs must hold for: the Llama prefill and decode step of
bench/llm_estimate_vs_measured.py (measured latency against `llm --hardware cpu`'s roofline
estimate), and ResNet-50 (bench/models.py, batch 1) on 1 and 2 threads (measured latency against
the sum over its nodes of max(FLOPs / peak, bytes / bandwidth)). For each it prints the roofs in
force when it started (as cached, or probed again where the cache was probed under more load
than now), the nodes (and the model) above those roofs, which make `profile` probe again, and
those still above the roofs after that, which `profile` then raises the roofs to; under each
ResNet-50 row, its nodes nearest their roofs (--nodes, achieved FLOP/s over the roofs in force
at the start, which this process probed where none were cached).

PASS: no phase or model measured faster than its roof (measured / roof >= 1) and no roof raised
(no node or model above the roofs probed). The ceilings are cached in --cache (default
/tmp/onnxflops-roofs-check), kept between runs: a first run on a loaded machine leaves its
ceilings there, probed under load, for the next run (on a quiet machine) to find. About 2-4
minutes on a quiet 2-core machine.

    nice -n 10 python bench/roofs_check.py [--cache DIR] [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

# profile's note when nodes or the model beat the roofs even after probing again
_RAISED = re.compile(r"^(\d+) node\(s\) or the model ran faster than the measured roofs")


def roof_ms(nodes, ceilings) -> float:
    """The roofline time of the executed nodes, Σ max(FLOPs / peak, bytes / bandwidth), in ms."""
    return 1e3 * sum(max(n.flops / ceilings.peak_flops_per_s,
                         n.bytes / ceilings.bandwidth_bytes_per_s) for n in nodes)


def roofs_in_force(threads: int | None):
    """The ceilings `profile` starts from for `threads` (float32, CPU): as cached, or probed
    again now where the cache was probed under load and the machine is quieter."""
    from onnxflops.profiling.ceilings import machine_ceilings
    from onnxflops.profiling.runtime import SessionConfig
    return machine_ceilings(SessionConfig("cpu", threads), "float32")


def check(label: str, profiled, before, roof: float, nodes: int = 0) -> bool:
    """Print one row: measured vs roof, nodes above the roofs in force before, nodes the roofs
    were raised for; whether it passes. Then the `nodes` nodes nearest the roofs in force before
    (achieved FLOP/s over the roofline at their intensity)."""
    from onnxflops.profiling.measure import above_roof

    at_start = len(above_roof(replace(profiled, ceilings=before)))
    raised = sum(int(m.group(1)) for w in profiled.warnings if (m := _RAISED.match(w)))
    measured = profiled.latency.median
    nearest = next((share for _, share in nearest_roof(profiled.nodes, profiled.ceilings)), 0.0)
    ok = measured >= roof and not raised
    print(f"{label:<34}{measured:>10.3f}{roof:>10.3f}{measured / roof:>7.2f}"
          f"{100 * nearest:>9.1f}%{at_start:>9}{raised:>8}  {'ok' if ok else 'ABOVE ROOF'}")
    for n, share in nearest_roof(profiled.nodes, before)[:nodes]:
        print(f"    {n.name[:40]:<42}{n.op_type:<14}{n.achieved_flops_per_s / 1e9:>8.1f} GFLOP/s"
              f"{100 * share:>8.1f}% of its roof at the start")
    return ok


def nearest_roof(nodes, ceilings) -> list:
    """(node, achieved FLOP/s over the roofline at its intensity under `ceilings`), highest
    first."""
    return sorted(((n, n.achieved_flops_per_s / ceilings.attainable(n.flops, n.bytes))
                   for n in nodes if n.bound != "-" and n.achieved_flops_per_s),
                  key=lambda pair: -pair[1])


def describe(c) -> str:
    load = "load not recorded" if c.load_per_core is None else \
        f"load {c.load_per_core:.1f}/core, {100 * (c.cpu_share or 0):.0f}% of the CPU"
    return (f"peak {c.peak_flops_per_s / 1e9:.1f} GFLOP/s, bandwidth "
            f"{c.bandwidth_bytes_per_s / 1e9:.1f} GB/s (probed {c.measured_at}, {load}"
            f"{', under load' if c.probed_under_load else ''})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default="/tmp/onnxflops-roofs-check",
                        help="where the ceilings are cached between runs")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--nodes", type=int, default=5,
                        help="ResNet-50's nodes nearest their roofs shown under its rows")
    args = parser.parse_args()
    os.environ["ONNXFLOPS_CACHE_DIR"] = args.cache
    start, load = time.monotonic(), os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cpus; ceilings cached in {args.cache}")

    import torch  # noqa: F401 - before TensorFlow, as the exporter may import both
    import onnx

    import models
    from llm_estimate_vs_measured import estimate_and_measure
    from onnxflops.profiling import profile

    # ratio: measured / roof (>= 1 on the roof or below it); top node: the highest node's
    # achieved FLOP/s over its roofline; >roof@0: nodes (and the model) above the roofs in force
    # at the start; raised: those still above once probed again, which the roofs were raised to.
    print(f"{'model / phase':<34}{'meas ms':>10}{'roof ms':>10}{'ratio':>7}{'top node':>10}"
          f"{'>roof@0':>9}{'raised':>8}")
    passed = True
    before = roofs_in_force(None)
    print(f"  roofs, default threads: {describe(before)}")
    _, r, step, prefill, decode = estimate_and_measure(256, 256, 1, 4, 512, runs=args.runs)
    passed &= check("Llama prefill (256 tokens)", prefill, before, 1e3 * r.estimate.prefill_s)
    passed &= check("Llama decode step (context 256)", decode, before,
                    1e3 * step.estimate.decode_s_per_token)

    resnet = models.resnet50(models.Weights("inline", "unused.data"))
    for threads in (1, 2):
        before = roofs_in_force(threads)
        print(f"  roofs, {threads} thread(s): {describe(before)}")
        p = profile(onnx.ModelProto.FromString(resnet.SerializeToString()), threads=threads,
                    runs=args.runs, inputs={"input": (1, 3, 224, 224)})
        passed &= check(f"ResNet-50, {threads} thread(s) "
                        f"({100 * p.efficiency:.0f}% of peak)", p, before,
                        roof_ms(p.nodes, p.ceilings), args.nodes)
    print(f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after; "
          f"{time.monotonic() - start:.0f} s")
    print("PASS: no model, phase or node above its roof" if passed else
          "FAIL: a model, phase or node ran faster than its roof")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
