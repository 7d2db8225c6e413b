"""Converting and counting a torch model against FlopCounterMode running it: the survey's two sides.

    python bench/speed_vs_oracle.py [--reps 3] [--only NAME] [--before CHECKOUT] [--skip-survey]

For torchvision ResNet-50, HF BERT-base (random init, 128 tokens) and timm ViT-B/16:

- whole process: `python -m onnxflops.cli count MODULE:FACTORY --input ...` against a process that
  builds the same model and runs it once under FlopCounterMode (grad on, MATH attention: what the
  survey's oracle does). Both build the model from the factories below, so both pay the same
  imports and construction; the children alternate which goes first, after one untimed run of
  each. CPU time (user + system, steadier on a busy machine than wall time) and wall time,
  medians over reps. Every child caches its bytecode, as an installed package does (see
  `env_for`).
- in process: one child builds the model once, then alternates `onnxflops.count(model,
  inputs=...)`, FlopCounterMode and fvcore's FlopCountAnalysis, each after one warm-up call
  (the first call of each pays one-time imports and registrations), medians over reps.

- survey: `onnxflops.survey` of five small timm, torchvision and HF rows, one at a time (each
  row builds its model, runs the oracle and counts, in a process of its own).

`--before CHECKOUT` runs onnxflops from another checkout (e.g. /work/main) beside this one, in the
same rotation, so the before and after columns are measured side by side. Every child has one
torch thread (OMP_NUM_THREADS=1), so CPU time is not inflated by idle spinning. Counts must agree
between the two checkouts; each side's MACs are printed beside the oracle's.

Targets (issue 19): the whole process under 1.0× FlopCounterMode's CPU time, in process under 5×.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WHOLE_TARGET, IN_PROCESS_TARGET = 1.0, 5.0

# name → (factory in this module, --input flags, the same inputs for Python)
MODELS = {
    "resnet50": ("resnet50", ["x=1x3x224x224"], {"x": ((1, 3, 224, 224), "float32")}),
    "bert-base": ("bert_base", ["input_ids=1x128:int64"], {"input_ids": ((1, 128), "int64")}),
    "vit-b16": ("vit_b16", ["x=1x3x224x224"], {"x": ((1, 3, 224, 224), "float32")}),
}


def resnet50():
    """torchvision's ResNet-50, random init."""
    import torchvision

    return torchvision.models.resnet50()


def bert_base():
    """HF BERT-base (BertConfig's defaults), random init."""
    import transformers

    return transformers.BertModel(transformers.BertConfig())


def vit_b16():
    """timm's ViT-B/16 at 224, random init."""
    import timm

    return timm.create_model("vit_base_patch16_224", pretrained=False)


# A whole process that builds the model and runs FlopCounterMode on it once, as the survey's
# oracle does (onnxflops.survey.oracle, written out here so this process imports no onnxflops).
_ORACLE = """
import sys, torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode
import speed_vs_oracle as b
factory, inputs = sys.argv[1], b.MODELS[sys.argv[2]][2]
model = getattr(b, factory)().eval()
args = b.tensors(inputs)
with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as c:
    model(**args)
print(c.get_total_flops() // 2)
"""

# A survey of a few small rows, one at a time; its forkserver (the template every torch row forks
# from) is stopped and reaped before the end, so that its CPU time and its rows' reach ours.
SURVEY_ROWS = ["timm:test_resnet", "timm:test_vit", "torchvision:squeezenet1_1",
               "torchvision:mobilenet_v3_small", "transformers:bert"]
_SURVEY = """
import multiprocessing, sys
from onnxflops.survey import survey
if __name__ == "__main__":
    rows = survey(sys.argv[1:], jobs=1, timeout=600, progress=False)
    server = getattr(getattr(multiprocessing, "forkserver", None), "_forkserver", None)
    if getattr(server, "_forkserver_pid", None):
        server._stop()
    print({r["model"]: (r["verdict"], r["macs"]) for r in rows})
"""

# One process: the model built once, each tool timed in turn, alternating; JSON on stdout.
_IN_PROCESS = """
import json, statistics, sys, time, warnings
import torch
import speed_vs_oracle as b
import onnxflops
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode
from fvcore.nn import FlopCountAnalysis
warnings.simplefilter("ignore")
name, reps = sys.argv[1], int(sys.argv[2])
factory, _, inputs = b.MODELS[name]
model = getattr(b, factory)().eval()
args = b.tensors(inputs)
def ours():
    return onnxflops.count(model, inputs=args).total.macs
def oracle():
    with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as c:
        model(**args)
    return c.get_total_flops() // 2
def fvcore():
    analysis = FlopCountAnalysis(model, tuple(args.values()))
    analysis.unsupported_ops_warnings(False)
    analysis.uncalled_modules_warnings(False)
    return analysis.total()
tools = {"onnxflops": ours, "FlopCounterMode": oracle, "fvcore": fvcore}
times = {k: {"cpu": [], "wall": []} for k in tools}
macs = {k: f() for k, f in tools.items()}  # warm-up: one-time imports and registrations
for rep in range(reps):
    order = list(tools)[rep % 3:] + list(tools)[:rep % 3]
    for k in order:
        cpu, wall = time.process_time(), time.perf_counter()
        tools[k]()
        times[k]["cpu"].append(time.process_time() - cpu)
        times[k]["wall"].append(time.perf_counter() - wall)
print(json.dumps({k: {"cpu": statistics.median(v["cpu"]), "wall": statistics.median(v["wall"]),
                      "macs": int(macs[k])} for k, v in times.items()}))
"""


def tensors(inputs: dict) -> dict:
    """The example inputs: random floats, token ids of ones (every id valid)."""
    import torch

    generator = torch.Generator().manual_seed(0)
    return {name: torch.randn(shape, generator=generator) if dtype == "float32"
            else torch.ones(shape, dtype=getattr(torch, dtype))
            for name, (shape, dtype) in inputs.items()}


def env_for(checkout: Path) -> dict[str, str]:
    """Children import onnxflops from `checkout` and the factories from bench/, their bytecode
    cached as an installed package's is (a machine that sets PYTHONDONTWRITEBYTECODE, as this
    project's does, compiles every onnxflops module anew in each process: a quarter of a second
    that no user with an installed onnxflops pays, while torch's own bytecode lies compiled)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_VERBOSITY="error", TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join([str(checkout), str(BENCH)]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """(wall seconds, stdout) of one child process, which must succeed."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             cwd=BENCH)
    out, err = child.communicate()
    wall = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}:\n{err.decode()[-3000:]}")
    return wall, out.decode()


def timed_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one child: its CPU time is what RUSAGE_CHILDREN
    gained while it ran (children run one at a time)."""

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, out = run_child(argv, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out


def whole_process(name: str, sides: dict[str, Path], reps: int) -> dict:
    """Median CPU and wall seconds of each side's `count` process and of the oracle's."""
    factory, flags, _ = MODELS[name]
    argvs = {side: [sys.executable, "-m", "onnxflops.cli", "count", f"speed_vs_oracle:{factory}",
                    *[a for f in flags for a in ("--input", f)], "--json"]
             for side in sides}
    argvs["FlopCounterMode"] = [sys.executable, "-c", _ORACLE, factory, name]
    envs = {side: env_for(path) for side, path in sides.items()}
    envs["FlopCounterMode"] = env_for(REPO)
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in argvs}
    macs = {}
    for key in argvs:  # untimed: bytecode written, the files read once
        run_child(argvs[key], envs[key])
    for rep in range(reps):
        keys = list(argvs)
        for key in keys[rep % len(keys):] + keys[:rep % len(keys)]:
            cpu, wall, out = timed_child(argvs[key], envs[key])
            runs[key].append((cpu, wall))
            macs[key] = int(out.split()[-1]) if key == "FlopCounterMode" \
                else json.loads(out)["total"]["macs"]
    return {k: {"cpu": statistics.median(c for c, _ in v), "wall": statistics.median(w for _, w in v),
                "macs": macs[k]} for k, v in runs.items()}


def in_process(name: str, sides: dict[str, Path], reps: int) -> dict:
    """Each side's child: medians of onnxflops.count, FlopCounterMode and fvcore, model built once."""
    return {side: json.loads(timed_child([sys.executable, "-c", _IN_PROCESS, name, str(reps)],
                                         env_for(path))[2].splitlines()[-1])
            for side, path in sides.items()}


def surveyed(sides: dict[str, Path]) -> dict:
    """Each side's CPU and wall seconds for SURVEY_ROWS, one row at a time, and its rows."""
    results = {}
    for side, path in sides.items():
        cpu, wall, out = timed_child([sys.executable, "-c", _SURVEY, *SURVEY_ROWS], env_for(path))
        results[side] = {"cpu": cpu, "wall": wall, "rows": out.splitlines()[-1]}
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", choices=list(MODELS))
    parser.add_argument("--before", type=Path, help="another checkout, run beside this one")
    parser.add_argument("--skip-whole", action="store_true")
    parser.add_argument("--skip-in-process", action="store_true")
    parser.add_argument("--skip-survey", action="store_true")
    args = parser.parse_args(argv)
    sides = {"after": REPO} if args.before is None else {"before": args.before, "after": REPO}
    names = [args.only] if args.only else list(MODELS)
    if not args.skip_whole:
        print(f"whole process, CPU s (wall s), medians of {args.reps}; ratio = CPU / "
              f"FlopCounterMode's CPU (target < {WHOLE_TARGET:g}×)")
        print("| model | FlopCounterMode | " + " | ".join(f"`count` {s} | ratio" for s in sides)
              + " | MACs (oracle / count) |")
        print("|---|---|" + "---|---|" * len(sides) + "---|")
        for name in names:
            r = whole_process(name, sides, args.reps)
            oracle = r["FlopCounterMode"]
            cells = [f"{r[s]['cpu']:.1f} ({r[s]['wall']:.1f}) | {r[s]['cpu'] / oracle['cpu']:.2f}×"
                     for s in sides]
            counts = " / ".join(f"{r[k]['macs']:,}" for k in ["FlopCounterMode", *sides])
            print(f"| {name} | {oracle['cpu']:.1f} ({oracle['wall']:.1f}) | "
                  + " | ".join(cells) + f" | {counts} |", flush=True)
    if not args.skip_in_process:
        print(f"\nin process, model built once, CPU s, medians of {args.reps} after a warm-up; "
              f"ratio = onnxflops.count / FlopCounterMode (target < {IN_PROCESS_TARGET:g}×)")
        print("| model | side | onnxflops.count | FlopCounterMode | ratio | fvcore | MACs |")
        print("|---|---|---|---|---|---|---|")
        for name in names:
            for side, r in in_process(name, sides, args.reps).items():
                ours, oracle = r["onnxflops"], r["FlopCounterMode"]
                print(f"| {name} | {side} | {ours['cpu']:.2f} ({ours['wall']:.2f}) | "
                      f"{oracle['cpu']:.2f} ({oracle['wall']:.2f}) | "
                      f"{ours['cpu'] / oracle['cpu']:.1f}× | {r['fvcore']['cpu']:.2f} | "
                      f"{ours['macs']:,} / {oracle['macs']:,} |", flush=True)

    if not args.skip_survey:
        print(f"\nsurvey of {len(SURVEY_ROWS)} rows, one at a time: CPU s (wall s)")
        for side, r in surveyed(sides).items():
            print(f"| {side} | {r['cpu']:.1f} ({r['wall']:.1f}) | {r['rows']} |", flush=True)


if __name__ == "__main__":
    main()
