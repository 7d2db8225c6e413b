"""`onnxflops report`: measure one or more models and write a self-contained HTML report."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from onnxflops.commands.common import (
    add_command,
    check_output_options,
    model_sources,
    print_result,
)
from onnxflops.commands.profile import add_measure_options, measure_kwargs
from onnxflops.errors import OnnxFlopsError, did_you_mean
from onnxflops.sources import declared_inputs, frameworks_for, load


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
    models = _with_inputs(args.models, kwargs["inputs"], args.unsafe)
    profiles = []
    failed = None
    with stages(len(args.models), STAGES) as bar:
        for name, (model, inputs) in zip(args.models, models):
            bar.start(str(name))
            try:
                profiles.append(profile(model, progress=bar.update,
                                        **{**kwargs, "inputs": inputs}))
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


def _with_inputs(models: list[str], shapes: dict, unsafe: bool) -> list[tuple[Any, dict]]:
    """Each model, loaded, with the --input bindings that name one of its inputs (others name
    other models'); a name that no model has is an error, as count and profile make it. A model
    whose kind declares no input names (a SavedModel) takes every binding, and may have any name;
    one that cannot be loaded takes none, and says why when its turn comes."""
    frameworks_for(*models)
    loaded, declared = [], []
    for model in models:
        try:
            model = load(model, unsafe=unsafe)
            names = set(declared_inputs(model)) or None
        except OnnxFlopsError:
            names = set()
        loaded.append(model)
        declared.append(names)
    if shapes and all(names is not None for names in declared):
        known = set().union(*declared)
        for name in shapes:
            if name not in known:
                raise OnnxFlopsError(f"--input {name}: no model has an input '{name}'"
                                     f"{did_you_mean(name, known)}; their inputs are: "
                                     f"{', '.join(sorted(known)) or '(none)'}")
    return [(model, shapes if names is None else {k: v for k, v in shapes.items() if k in names})
            for model, names in zip(loaded, declared)]
