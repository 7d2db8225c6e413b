"""`onnxflops count` against the floor, as whole processes: what a user waits for.

The floor is what any tool must do to know a model's shapes: `onnx.load(path,
load_external_data=False)` plus `onnx.shape_inference.infer_shapes` on the same file. For each
model (built by bench/models.py: ResNet-50 with inline and with external weights, BERT-base, a
50,000-node graph, Llama-shaped decoders of 32 and 80 layers exported from a meta-device module)
the floor, `python -m onnxflops.cli count ...` (the table a user reads) and `count ... --json` run
as child processes, interleaved and rotating in order (a noisy machine drifts); medians are
compared. Building the decoders needs torch and transformers (a minute or two).

Targets: count at most 1.5× the floor (`--json` is reported beside it, with no target); count's peak RSS does not grow with the weight bytes
(ResNet-50 with inline weights vs external data); counting imports no ML framework.

    python bench/count_vs_floor.py [--reps 7] [--keep DIR] [--only NAME]

This process imports neither onnx nor numpy: a child's peak RSS includes what it inherited at
fork, so the parent stays small and the models are built in a child of their own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
FORBIDDEN_IMPORTS = ("torch", "tensorflow", "keras", "tf2onnx", "jax")
TARGET_RATIO = 1.5
FLOOR = ("import onnx, sys; m = onnx.load(sys.argv[1], load_external_data=False); "
         "onnx.shape_inference.infer_shapes(m)")


@dataclass
class Run:
    seconds: float
    cpu_seconds: float  # user + system: steadier than wall time on a busy machine
    peak_rss: int  # bytes


def run_child(argv: list[str], env: dict[str, str]) -> Run:
    """Wall time and peak RSS of one child process, which must succeed."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}:\n{stderr.decode()}")
    return Run(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)


def floor_argv(case: dict) -> list[str]:
    return [sys.executable, "-c", FLOOR, case["path"]]


def count_argv(case: dict, *count_flags: str, python_flags: tuple[str, ...] = ()) -> list[str]:
    inputs = [arg for spec in case["inputs"] for arg in ("--input", spec)]
    return [sys.executable, *python_flags, "-m", "onnxflops.cli", "count", case["path"],
            *inputs, *count_flags]


def imported_frameworks(case: dict, env: dict[str, str]) -> list[str]:
    """Top-level packages from FORBIDDEN_IMPORTS that the counting process imported."""
    done = subprocess.run(count_argv(case, python_flags=("-X", "importtime")), env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            top = line.rsplit("|", 1)[1].strip().split(".")[0]
            if top in FORBIDDEN_IMPORTS:
                found.add(top)
    return sorted(found)


def mib(n: float) -> str:
    return f"{n / 2**20:.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="runs of each process (default 7)")
    parser.add_argument("--keep", type=Path, help="build the models in DIR and keep them")
    parser.add_argument("--only", action="append", help="run only the named model(s)")
    args = parser.parse_args(argv)

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    # A user's Python caches bytecode: the first (warm-up) run writes onnxflops' .pyc files.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="onnxflops-bench-") as tmp:
        directory = args.keep or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        print(f"building models in {directory} ...", flush=True)
        built = subprocess.run([sys.executable, str(BENCH / "models.py"), str(directory),
                                *(args.only or ())],
                               env=env, check=True, stdout=subprocess.PIPE, text=True)
        cases = json.loads(built.stdout)
        for c in cases:
            print(f"  {c['name']:18s} {c['nodes']:6d} nodes  {c['params'] / 1e6:6.1f}M params  "
                  f"file {mib(Path(c['path']).stat().st_size)}", flush=True)

        floors: dict[str, list[Run]] = {c["name"]: [] for c in cases}
        counts: dict[str, list[Run]] = {c["name"]: [] for c in cases}
        jsons: dict[str, list[Run]] = {c["name"]: [] for c in cases}
        for c in cases:  # warm-up: page cache, bytecode cache
            for child in (floor_argv(c), count_argv(c), count_argv(c, "--json")):
                run_child(child, env)
        for rep in range(args.reps):
            for c in cases:
                trio = [(floors, floor_argv(c)), (counts, count_argv(c)),
                        (jsons, count_argv(c, "--json"))]
                for runs, child in trio[rep % 3:] + trio[:rep % 3]:
                    runs[c["name"]].append(run_child(child, env))
            print(f"  rep {rep + 1}/{args.reps} done", flush=True)

        # Ratios are medians over the reps of each floor/count pair, run back to back.
        print(f"\n{'model':18s} {'floor s':>8s} {'count s':>8s} {'ratio':>6s} {'CPU ratio':>9s} "
              f"{'--json s':>8s} {'ratio':>6s}  {'floor RSS':>10s} {'count RSS':>10s}")
        worst = 0.0
        for c in cases:
            fs, ks, js = floors[c["name"]], counts[c["name"]], jsons[c["name"]]
            ratio = statistics.median(k.seconds / f.seconds for f, k in zip(fs, ks))
            cpu_ratio = statistics.median(k.cpu_seconds / f.cpu_seconds for f, k in zip(fs, ks))
            json_ratio = statistics.median(j.seconds / f.seconds for f, j in zip(fs, js))
            worst = max(worst, ratio)
            print(f"{c['name']:18s} {statistics.median(r.seconds for r in fs):8.3f} "
                  f"{statistics.median(r.seconds for r in ks):8.3f} {ratio:5.2f}x "
                  f"{cpu_ratio:8.2f}x {statistics.median(r.seconds for r in js):8.3f} "
                  f"{json_ratio:5.2f}x  {mib(max(r.peak_rss for r in fs)):>10s} "
                  f"{mib(max(r.peak_rss for r in ks)):>10s}")
        ok = worst <= TARGET_RATIO
        print(f"\nworst count ratio {worst:.2f}x (target ≤ {TARGET_RATIO}x): "
              f"{'PASS' if ok else 'FAIL'}")

        by_name = {c["name"]: c for c in cases}
        if "resnet50-inline" in by_name and "resnet50-external" in by_name:
            inline_rss = max(r.peak_rss for r in counts["resnet50-inline"])
            external_rss = max(r.peak_rss for r in counts["resnet50-external"])
            weight_bytes = by_name["resnet50-inline"]["inline_weight_bytes"]
            grew = inline_rss - external_rss
            # Holding the weights even once would add their full size; a tenth of it is noise.
            rss_ok = grew < weight_bytes / 10
            print(f"count peak RSS, inline vs external weights: {mib(inline_rss)} vs "
                  f"{mib(external_rss)} (+{mib(grew)} for {mib(weight_bytes)} of weights): "
                  f"{'PASS' if rss_ok else 'FAIL'}")
            ok &= rss_ok
        imported = {c["name"]: imported_frameworks(c, env) for c in cases}
        for name, frameworks in imported.items():
            if frameworks:
                print(f"{name}: counting imported {', '.join(frameworks)}: FAIL")
        clean = not any(imported.values())
        print(f"counting imported none of {', '.join(FORBIDDEN_IMPORTS)}: "
              f"{'PASS' if clean else 'FAIL'}")
        ok &= clean
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
