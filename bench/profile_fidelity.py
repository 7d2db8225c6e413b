"""Does `onnxflops.profile` time what a user would time? Its median latency against a bare
onnxruntime loop over the framework's own plain export of the same model.

    python bench/profile_fidelity.py [--models resnet50,mobilenet_v3_large,...] [--rounds 3]
        [--runs 30] [--threads 2] [--graphs deployed,counted]

For each model (torchvision ResNet-50, MobileNetV3-Large and ViT-B/16 and transformers BERT-base
from its config, random weights; two Keras Applications models, weights=None):

- plain: the framework's own export, as a user makes it (`torch.onnx.export(model, args,
  dynamo=True)` with its defaults; Keras `model.export(path, format="onnx")`, tf2onnx's default
  conversion), saved to a file and run in a bare onnxruntime loop: one session, the same intra-op
  threads, `--warmup` untimed runs, then `--runs` timed ones, median;
- profile: `onnxflops.profile(model, inputs=..., graph=G)` with the same threads, runs and
  warm-up, its median latency (end to end, profiler off).

Rounds are interleaved (every model's plain loop, then its profile per graph, round after
round), and the ratio per round is profile / plain; the median over rounds is printed with the
load average each round started under. Between two models, the latency ratio the profile gives
against the one the plain files give (the FLOPs of both are the count's, the same on both sides).
Target: every ratio 1.00 ± 0.05 on a quiet machine (the machine's load average is printed: on a
shared one, read the ratios with it).
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def plain_export(name: str, model, inputs, directory: Path) -> Path:
    """The framework's own export of `model`, with its defaults, as a file."""
    path = directory / f"{name.replace(':', '_')}.onnx"
    if name.startswith("keras:"):
        model(inputs[0], training=False)  # Keras exports a model that has been called
        model.export(str(path), format="onnx", verbose=False)
        return path
    import torch

    args = tuple(inputs.values())
    program = torch.onnx.export(model, args, dynamo=True, input_names=list(inputs),
                                verbose=False)
    program.save(str(path))
    return path


def bare_loop(path: Path, feeds: list, threads: int, runs: int, warmup: int) -> float:
    """Median ms of `runs` timed runs of one onnxruntime session, after `warmup` runs."""
    import onnxruntime as ort

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
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(TORCH_MODELS + KERAS_MODELS),
                        help="comma-separated: " + ", ".join(TORCH_MODELS + KERAS_MODELS))
    parser.add_argument("--graphs", default="deployed",
                        help="comma-separated graphs profile runs (deployed, counted)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    graphs = [g for g in args.graphs.split(",") if g]
    if any(n.startswith("keras:") for n in names):  # torch (and triton) before TensorFlow
        import torch  # noqa: F401

    import onnxflops

    built = {name: build(name) for name in names}
    plain: dict[str, list[float]] = {n: [] for n in names}
    profiled: dict[tuple[str, str], list[float]] = {(n, g): [] for n in names for g in graphs}
    flops: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        files = {n: plain_export(n, m, i, Path(tmp)) for n, (m, i, _) in built.items()}
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds}: load average "
                  f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores",
                  file=sys.stderr, flush=True)
            for name, (model, inputs, feeds) in built.items():
                plain[name].append(bare_loop(files[name], feeds, args.threads, args.runs,
                                             args.warmup))
                for graph in graphs:
                    result = onnxflops.profile(model, inputs=inputs, threads=args.threads,
                                               runs=args.runs, warmup=args.warmup,
                                               profile_runs=2, ceilings=False, graph=graph,
                                               max_seconds=None)
                    profiled[name, graph].append(result.latency.median)
                    flops[name] = result.flops
                print(f"  {name}: plain {plain[name][-1]:.2f} ms, "
                      + ", ".join(f"profile {g} {profiled[name, g][-1]:.2f} ms" for g in graphs),
                      file=sys.stderr, flush=True)
    print(f"threads={args.threads} runs={args.runs} warmup={args.warmup} rounds={args.rounds}; "
          "ratio = profile median / plain median, per round, then the median over rounds")
    print(f"{'model':22} {'GFLOPs':>8} {'plain ms':>9} " + " ".join(
        f"{g + ' ms':>12} {'ratio':>6}" for g in graphs))
    ratios = {}
    for name in names:
        cells = []
        for graph in graphs:
            ratio = statistics.median(p / b for p, b in zip(profiled[name, graph], plain[name]))
            ratios[name, graph] = ratio
            cells.append(f"{statistics.median(profiled[name, graph]):12.2f} {ratio:6.2f}")
        print(f"{name:22} {flops[name] / 1e9:8.2f} {statistics.median(plain[name]):9.2f} "
              + " ".join(cells))
    if len(names) > 1:
        print("\nbetween models (A / B): FLOPs ratio, latency ratio from the profile and from "
              "the plain files, and their quotient")
        for a, b in zip(names, names[1:]):
            plain_ratio = statistics.median(plain[a]) / statistics.median(plain[b])
            for graph in graphs:
                prof_ratio = statistics.median(profiled[a, graph]) / \
                    statistics.median(profiled[b, graph])
                print(f"{a} / {b} [{graph}]: FLOPs {flops[a] / flops[b]:.2f}x, latency "
                      f"profile {prof_ratio:.2f}x, plain {plain_ratio:.2f}x, quotient "
                      f"{prof_ratio / plain_ratio:.2f}")
    off = [f"{n} [{g}] {r:.2f}" for (n, g), r in ratios.items() if abs(r - 1) > TARGET]
    print(f"\noutside 1.00 ± {TARGET:.2f}: {', '.join(off) if off else 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
