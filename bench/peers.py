"""onnxflops beside the other counters: fvcore, thop, ptflops, calflops, torchinfo, DeepSpeed's flops
profiler and torch's FlopCounterMode, on a CNN, a ViT, BERT, a GRU model and a detector.

    python bench/peers.py [--models resnet50 vit_b_16 ...] [--out FILE]

Every model is built with random weights (nothing is downloaded); each model runs in a process of
its own, and each tool on a freshly built copy of it, so no tool's hooks or patches reach another.
A tool that is not installed says so; one that fails on a model shows its error's first line, not
a number. Each figure is printed as the tool labels it (MACs, FLOPs, params), exactly, as an
integer; "—" where the tool reports no such figure. The Markdown goes to stdout or to --out.

The peers install with `pip install 'onnxflops[peers]'` (deepspeed needs DS_BUILD_OPS=0 and
`--no-build-isolation` on a machine without CUDA). docs/peers.md shows this script's output and
the reason behind each difference.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
SEED = 0
THREADS = 2


@dataclass(frozen=True)
class Model:
    """A model of the comparison: how it is built and the inputs its forward takes, by name."""

    title: str
    build: Callable[[], object]
    inputs: Callable[[], dict]  # forward argument name → example tensor


def resnet50():
    import torchvision

    return torchvision.models.resnet50(weights=None)


def vit_b_16():
    import torchvision

    return torchvision.models.vit_b_16(weights=None)


def bert_base():
    """BERT-base from BertConfig's defaults, with transformers' default attention (SDPA)."""
    import transformers

    return transformers.BertModel(transformers.BertConfig())


def gru_classifier():
    """A text classifier: embeddings, a 2-layer GRU, a linear head on the last step."""
    from torch import nn

    class GruClassifier(nn.Module):
        def __init__(self, vocab: int = 10_000, embed: int = 128, hidden: int = 256,
                     classes: int = 2):
            super().__init__()
            self.embedding = nn.Embedding(vocab, embed)
            self.gru = nn.GRU(embed, hidden, num_layers=2, batch_first=True)
            self.head = nn.Linear(hidden, classes)

        def forward(self, input_ids):
            states, _ = self.gru(self.embedding(input_ids))
            return self.head(states[:, -1])

    return GruClassifier()


def detector():
    """torchvision's Faster R-CNN, MobileNetV3-Large FPN at 320 (resized to 320 inside), taking
    a batch tensor rather than a list of images, so that every tool can be given it."""
    import torchvision
    from torch import nn

    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
                weights=None, weights_backbone=None)

        def forward(self, images):
            return self.model(list(images))

    return Detector()


def _tensor(shape, integers: int | None = None):
    import torch

    generator = torch.Generator().manual_seed(SEED)
    if integers:
        return torch.randint(0, integers, shape, generator=generator)
    return torch.rand(shape, generator=generator)


MODELS = {
    "resnet50": Model("torchvision ResNet-50, 1×3×224×224", resnet50,
                      lambda: {"x": _tensor((1, 3, 224, 224))}),
    "vit_b_16": Model("torchvision ViT-B/16, 1×3×224×224", vit_b_16,
                      lambda: {"x": _tensor((1, 3, 224, 224))}),
    "bert": Model("transformers BERT-base (BertModel), 1×128 tokens", bert_base,
                  lambda: {"input_ids": _tensor((1, 128), integers=30_000)}),
    "gru": Model("2-layer GRU text classifier (embedding 128, hidden 256), 1×64 tokens",
                 gru_classifier, lambda: {"input_ids": _tensor((1, 64), integers=10_000)}),
    "detector": Model("torchvision Faster R-CNN MobileNetV3-Large 320 FPN, 1×3×320×320",
                      detector, lambda: {"images": _tensor((1, 3, 320, 320))}),
}


# Each tool: (model, inputs by name) → {"macs"/"flops"/"params": int}, the figures it reports.
def fvcore(model, inputs):
    from fvcore.nn import FlopCountAnalysis, parameter_count

    analysis = FlopCountAnalysis(model, tuple(inputs.values()))
    analysis.unsupported_ops_warnings(False)
    analysis.uncalled_modules_warnings(False)
    return {"flops": analysis.total(), "params": parameter_count(model)[""],
            "skipped": sorted(analysis.unsupported_ops())}


def thop(model, inputs):
    import thop as _thop

    macs, params = _thop.profile(model, inputs=tuple(inputs.values()), verbose=False)
    return {"macs": macs, "params": params}


def ptflops(model, inputs):
    from ptflops import get_model_complexity_info

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        macs, params = get_model_complexity_info(
            model, (1,), input_constructor=lambda _: dict(inputs), as_strings=False,
            print_per_layer_stat=False, verbose=False)
    if macs is None:  # ptflops prints the exception and returns None
        lines = [line for line in printed.getvalue().splitlines() if line.startswith("<class")]
        raise RuntimeError(lines[0] if lines else "no count")
    return {"macs": macs, "params": params}


def calflops(model, inputs):
    from calflops import calculate_flops

    with contextlib.redirect_stdout(io.StringIO()):
        flops, macs, params = calculate_flops(model, kwargs=dict(inputs), print_results=False,
                                              print_detailed=False, output_as_string=False)
    return {"macs": macs, "flops": flops, "params": params}


def torchinfo(model, inputs):
    from torchinfo import summary

    stats = summary(model, input_data=dict(inputs), verbose=0)
    return {"macs": stats.total_mult_adds, "params": stats.total_params}


def deepspeed(model, inputs):
    from deepspeed.profiling.flops_profiler import get_model_profile

    with contextlib.redirect_stdout(io.StringIO()):
        flops, macs, params = get_model_profile(model, kwargs=dict(inputs), print_profile=False,
                                                detailed=False, as_string=False)
    return {"macs": macs, "flops": flops, "params": params}


def flop_counter_mode(model, inputs):
    """As its documentation shows it: the forward run inside the mode, grad on, default SDPA."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        model(**inputs)
    return {"flops": counter.get_total_flops()}


# name → (runner, the distribution whose version the page shows, how its figures are labelled)
TOOLS = {
    "fvcore": (fvcore, "fvcore"),
    "thop": (thop, "thop"),
    "ptflops": (ptflops, "ptflops"),
    "calflops": (calflops, "calflops"),
    "torchinfo": (torchinfo, "torchinfo"),
    "DeepSpeed": (deepspeed, "deepspeed"),
    "FlopCounterMode": (flop_counter_mode, "torch"),
}
# onnxflops's rows: the default convention, and the per-op convention that reproduces fvcore.
ONNXFLOPS_ROWS = {"onnxflops": "default", "onnxflops --convention fvcore": "fvcore"}


def onnxflops_counts(model, inputs) -> dict[str, dict]:
    """onnxflops's rows: the model converted once, counted under each convention of the table."""
    import onnxflops
    from onnxflops.sources import to_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fallback exporter's note: the count is what matters
        proto = to_onnx(model, inputs).counted
        rows = {}
        for row, convention in ONNXFLOPS_ROWS.items():
            total = onnxflops.count(proto, convention=convention).total
            figures = {"flops": int(total.flops), "params": int(total.params)}
            if convention == "default":
                figures["macs"] = int(total.macs)
            rows[row] = figures
    return rows


def measure(name: str) -> dict[str, dict]:
    """Every tool on a fresh copy of model `name`: its figures, or its error's first line."""
    import torch

    torch.set_num_threads(THREADS)
    spec = MODELS[name]
    rows: dict[str, dict] = {}

    def fresh():
        torch.manual_seed(SEED)
        return spec.build().eval(), spec.inputs()

    for tool, (runner, distribution) in TOOLS.items():
        try:
            metadata.version(distribution)
        except metadata.PackageNotFoundError:
            rows[tool] = {"error": f"not installed (pip install {distribution})"}
            continue
        rows[tool] = _attempt(runner, *fresh())
    try:
        rows.update(onnxflops_counts(*fresh()))
    except Exception as e:
        rows["onnxflops"] = {"error": _first_line(e)}
    return rows


def _attempt(runner, model, inputs) -> dict:
    started = time.perf_counter()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            figures = runner(model, inputs)
    except Exception as e:  # a peer's failure is a row of the table, not the end of the run
        return {"error": _first_line(e)}
    figures = {k: (int(v) if k != "skipped" else v) for k, v in figures.items()}
    figures["seconds"] = round(time.perf_counter() - started, 1)
    return figures


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    line = f"{type(e).__name__}: {text[0] if text else ''}".strip()
    return line if len(line) <= 160 else line[:157] + "..."


def versions() -> dict[str, str]:
    names = ["onnxflops", "torch", "torchvision", "transformers",
             *(distribution for _, distribution in TOOLS.values())]
    found = {}
    for name in dict.fromkeys(names):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _number(value) -> str:
    return "—" if value is None else f"{value:,}"


def markdown(results: dict[str, dict[str, dict]]) -> str:
    """One table per model: each tool's figures as it labels them, or its error."""
    lines = ["Versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()), ""]
    for name, rows in results.items():
        lines += [f"### {name}: {MODELS[name].title}", "",
                  "| tool | MACs | FLOPs | params | note |",
                  "|---|--:|--:|--:|---|"]
        for tool, row in rows.items():
            if "error" in row:
                lines.append(f"| {tool} | | | | {row['error'].replace('|', '/')} |")
                continue
            note = ""
            if row.get("skipped"):
                note = "skips " + ", ".join(row["skipped"])
            lines.append(f"| {tool} | {_number(row.get('macs'))} | {_number(row.get('flops'))} "
                         f"| {_number(row.get('params'))} | {note} |")
        lines.append("")
    return "\n".join(lines)


def parse_table(text: str) -> dict[str, dict[str, dict[str, int | None]]]:
    """The tables `markdown` wrote (docs/peers.md holds one): model → tool → figures."""
    tables: dict[str, dict] = {}
    model = None
    for line in text.splitlines():
        heading = re.match(r"### (\w+): ", line)
        if heading and heading[1] in MODELS:
            model = heading[1]
            tables[model] = {}
        elif model and line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[0] not in ("tool", "---"):
                tables[model][cells[0]] = {
                    key: (None if cell in ("", "—") else int(cell.replace(",", "")))
                    for key, cell in zip(("macs", "flops", "params"), cells[1:4])}
        elif model and tables[model]:  # the first line after the table ends it
            model = None
    return tables


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS),
                   help="models to compare (default: all five)")
    p.add_argument("--out", type=Path, help="write the Markdown here rather than to stdout")
    p.add_argument("--one", choices=list(MODELS), help=argparse.SUPPRESS)  # a child's model
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.one:  # a child: one model, JSON on stdout
        rows = measure(args.one)
        print(json.dumps(rows))
        return 0
    results = {}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "OMP_NUM_THREADS": str(THREADS), "TF_CPP_MIN_LOG_LEVEL": "3"}
    for name in args.models:
        started = time.perf_counter()
        child = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True,
                               text=True, env=env)
        if child.returncode:
            tail = (child.stderr.strip().splitlines() or ["no output"])[-1]
            results[name] = {"(all)": {"error": f"the model's process failed: {tail}"}}
        else:
            results[name] = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    text = markdown(results)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
