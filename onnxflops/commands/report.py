"""`onnxflops report`: measure one or more models and write a self-contained HTML report."""

from __future__ import annotations

import argparse
import sys

from onnxflops.commands.common import (
    add_command,
    check_output_options,
    model_sources,
    print_result,
)
from onnxflops.commands.profile import add_measure_options, measure_kwargs
from onnxflops.errors import OnnxFlopsError


def register(sub) -> None:
    p = add_command(
        sub, "report", "measure models and write an HTML report with plots",
        "Count and measure each model under onnxruntime, then write one self-contained HTML "
        "file: a summary per model, latency share against FLOPs share per op type, per-node "
        "FLOPs against latency, the roofline under the measured ceilings and, for several "
        "models, latency against GFLOPs.", model=None, inputs=True, conversion=True,
        convention=True, rows="executed node of each model",
        page="the summary, each model's tables and plots", page_names=("--output", "-o"),
        page_default="onnxflops-report.html")
    p.add_argument("models", nargs="+", metavar="MODEL",
                   help=f"{model_sources()} (inputs that a model lacks are ignored for it)")
    add_measure_options(p)
    p.add_argument("--title", default="onnxflops report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from onnxflops.html import page
    from onnxflops.profiling import STAGES, profile
    from onnxflops.progress import stages

    check_output_options(args)
    kwargs = measure_kwargs(args)
    profiles = []
    failed = None
    with stages(len(args.models), STAGES) as bar:
        for model in args.models:
            bar.start(str(model))
            try:
                profiles.append(profile(model, progress=bar.update, **{
                    **kwargs, "inputs": _inputs_for(model, kwargs["inputs"])}))
            except OnnxFlopsError as e:
                failed = e
                break
            bar.finish_one()
    if failed is not None and not profiles:
        raise failed
    # Nothing printed unasked: the page goes to its FILE (--html/--output), the rest where asked.
    print_result(page.Profiles(profiles, args.title), args, printed=None,
                 page=lambda result: page.to_html(result.profiles, result.model))
    if args.html != "-":
        print(f"wrote {args.html}", file=sys.stderr)
    if failed is not None:
        # What was measured is kept; the model at fault is named, and the exit status says so.
        model = args.models[len(profiles)]
        named = "" if str(failed).startswith(model) else f"{model}: "
        raise OnnxFlopsError(f"{named}{failed} (the report holds the {len(profiles)} model(s) "
                             f"measured before it; {len(args.models) - len(profiles) - 1} after "
                             "it were not measured)")
    return 0


def _inputs_for(model: str, shapes: dict) -> dict:
    """The --input bindings that name an input of this ONNX model (others name other models')."""
    if not shapes or not str(model).endswith(".onnx"):
        return shapes
    from onnxflops.bind import real_inputs
    from onnxflops.load import load_model

    names = {i.name for i in real_inputs(load_model(model))}
    return {k: v for k, v in shapes.items() if k in names}
