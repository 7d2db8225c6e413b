"""Does `onnxflops.profile` time what a user would time? Its median latency against a bare
onnxruntime loop over the framework's own plain export of the same model.

    python bench/profile_fidelity.py [--models resnet50,mobilenet_v3_large,...] [--rounds 5]
        [--runs 30] [--threads 2] [--graphs deployed,counted]

For each model (torchvision ResNet-50, MobileNetV3-Large and ViT-B/16 and transformers BERT-base
from its config, random weights; two Keras Applications models, weights=None):

- plain: the framework's own export, as a user makes it (`torch.onnx.export(model, args,
  dynamo=True)` with its defaults; Keras `model.export(path, format="onnx")`, tf2onnx's default
  conversion), saved to a file and run in a bare onnxruntime loop: one session, the same intra-op
  threads, `--warmup` untimed runs, then `--runs` timed ones, median;
- profile: `onnxflops.profile(model, inputs=..., graph=G)` with the same threads, runs and
  warm-up, its median latency (end to end, profiler off).

Every measurement runs in a fresh Python process, as a user's script would: timings taken in
one long process drift with what ran before them (allocator state, a framework's idle threads),
and on a shared VM a process's latency lands in one of a few modes whatever it runs. Rounds are
interleaved, the order of the two sides alternating round by round. Printed per model: each
side's median over rounds, the median of the per-round ratios (profile / plain), and the ratio
of each side's best round (its quietest: the quiet-machine figure the target is for), with the
load average each round started under. Between two models, the latency ratio the profile gives
against the one the plain files give (the FLOPs of both are the count's, the same on both sides).
Target: every ratio 1.00 ± 0.05 on a quiet machine.
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
from pathlib import Path

TORCH_MODELS = ("resnet50", "mobilenet_v3_large", "vit_b_16", "bert")
KERAS_MODELS = ("keras:MobileNetV2", "keras:ResNet50")
TARGET = 0.05


def build(name: str):
    """(model, inputs as profile takes them, feeds for the plain file in its input order)."""
    import numpy as np

    if name.startswith("keras:"):
        import keras

        model = getattr(keras.applications, name.split(":", 1)[1])(weights=None)
        x = np.random.default_rng(0).standard_normal((1, 224, 224, 3), dtype=np.float32)
        return model, [x], [x]
    import torch

    torch.manual_seed(0)
    if name == "bert":
        from transformers import BertConfig, BertModel

        model = BertModel(BertConfig(attn_implementation="eager")).eval()
        ids = torch.randint(0, model.config.vocab_size, (1, 128), dtype=torch.long)
        return model, {"input_ids": ids}, [ids.numpy()]
    import torchvision

    model = getattr(torchvision.models, name)().eval()
    x = torch.randn(1, 3, 224, 224)
    return model, {"x": x}, [x.numpy()]


def plain_export(name: str, directory: Path) -> None:
    """The framework's own export of the model, with its defaults, and its feeds, as files."""
    import numpy as np

    model, inputs, feeds = build(name)
    path = _file(name, directory)
    if name.startswith("keras:"):
        model(inputs[0], training=False)  # Keras exports a model that has been called
        model.export(str(path), format="onnx", verbose=False)
    else:
        import torch

        program = torch.onnx.export(model, tuple(inputs.values()), dynamo=True,
                                    input_names=list(inputs), verbose=False)
        program.save(str(path))
    np.savez(path.with_suffix(".npz"), *feeds)


def bare_loop(path: Path, threads: int, runs: int, warmup: int) -> dict:
    """Median ms of `runs` timed runs of one onnxruntime session, after `warmup` runs."""
    import numpy as np
    import onnxruntime as ort

    with np.load(path.with_suffix(".npz")) as saved:
        feeds = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    named = {arg.name: value for arg, value in zip(session.get_inputs(), feeds)}
    for _ in range(warmup):
        session.run(None, named)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, named)
        times.append((time.perf_counter() - start) * 1e3)
    return {"ms": statistics.median(times)}


def profiled(name: str, graph: str, threads: int, runs: int, warmup: int) -> dict:
    """`onnxflops.profile` of the model as a user calls it: its median ms and its FLOPs."""
    if name.startswith("keras:"):  # torch (and triton) before TensorFlow
        import torch  # noqa: F401
    import onnxflops

    model, inputs, _ = build(name)
    result = onnxflops.profile(model, inputs=inputs, threads=threads, runs=runs, warmup=warmup,
                               profile_runs=2, ceilings=False, graph=graph, max_seconds=None)
    return {"ms": result.latency.median, "flops": result.flops}


def _file(name: str, directory: Path) -> Path:
    return directory / f"{name.replace(':', '_')}.onnx"


def _child(argv: list[str]) -> dict:
    """Run one step of this script in a fresh process; its JSON answer."""
    done = subprocess.run([sys.executable, __file__, "--child", *argv], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _run_child(args) -> int:
    step, name = args.child, args.models
    directory = Path(args.directory)
    if step == "export":
        plain_export(name, directory)
        answer = {}
    elif step == "plain":
        answer = bare_loop(_file(name, directory), args.threads, args.runs, args.warmup)
    else:
        answer = profiled(name, step.removeprefix("profile:"), args.threads, args.runs,
                          args.warmup)
    print(json.dumps(answer))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(TORCH_MODELS + KERAS_MODELS),
                        help="comma-separated: " + ", ".join(TORCH_MODELS + KERAS_MODELS))
    parser.add_argument("--graphs", default="deployed",
                        help="comma-separated graphs profile runs (deployed, counted)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--directory", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _run_child(args)
    names = [n for n in args.models.split(",") if n]
    graphs = [g for g in args.graphs.split(",") if g]
    sides = ["plain"] + [f"profile:{g}" for g in graphs]
    ms: dict[tuple[str, str], list[float]] = {(n, s): [] for n in names for s in sides}
    flops: dict[str, float] = {}
    common = ["--threads", str(args.threads), "--runs", str(args.runs), "--warmup",
              str(args.warmup)]
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        for name in names:
            _child(["export", "--models", name, "--directory", tmp])
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds}: load average "
                  f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores",
                  file=sys.stderr, flush=True)
            for name in names:
                order = sides if round_ % 2 == 0 else sides[::-1]
                for side in order:
                    answer = _child([side, "--models", name, "--directory", tmp, *common])
                    ms[name, side].append(answer["ms"])
                    if answer.get("flops"):
                        flops[name] = answer["flops"]
                print(f"  {name}: " + ", ".join(f"{s} {ms[name, s][-1]:.2f} ms" for s in sides),
                      file=sys.stderr, flush=True)
    print(f"threads={args.threads} runs={args.runs} warmup={args.warmup} rounds={args.rounds}, "
          "each measurement in a fresh process; ratio = profile / plain: the median of the "
          "per-round ratios, and best = each side's best round")
    print(f"{'model':22} {'GFLOPs':>7} {'plain ms':>9} " + " ".join(
        f"{s.removeprefix('profile:') + ' ms':>12} {'ratio':>6} {'best':>6}" for s in sides[1:]))
    best_ratio = {}
    for name in names:
        plain = ms[name, "plain"]
        cells = []
        for side in sides[1:]:
            ratio = statistics.median(p / b for p, b in zip(ms[name, side], plain))
            best_ratio[name, side] = min(ms[name, side]) / min(plain)
            cells.append(f"{statistics.median(ms[name, side]):12.2f} {ratio:6.2f} "
                         f"{best_ratio[name, side]:6.2f}")
        gflops = f"{flops[name] / 1e9:7.2f}" if flops.get(name) else f"{'-':>7}"
        print(f"{name:22} {gflops} {statistics.median(plain):9.2f} " + " ".join(cells))
    if len(names) > 1:
        print("\nbetween models (A / B), best rounds: FLOPs ratio, latency ratio from the "
              "profile and from the plain files, and their quotient")
        for a, b in zip(names, names[1:]):
            plain_ratio = min(ms[a, "plain"]) / min(ms[b, "plain"])
            for side in sides[1:]:
                prof_ratio = min(ms[a, side]) / min(ms[b, side])
                fl = (f"FLOPs {flops[a] / flops[b]:.2f}x, " if flops.get(a) and flops.get(b)
                      else "")
                print(f"{a} / {b} [{side.removeprefix('profile:')}]: {fl}latency profile "
                      f"{prof_ratio:.2f}x, plain {plain_ratio:.2f}x, quotient "
                      f"{prof_ratio / plain_ratio:.2f}")
    off = [f"{n} [{s.removeprefix('profile:')}] {r:.2f}" for (n, s), r in best_ratio.items()
           if abs(r - 1) > TARGET]
    print(f"\nbest rounds outside 1.00 ± {TARGET:.2f}: {', '.join(off) if off else 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
