"""`onnxflops survey`: count whole registries of models, each against its framework's own count."""

from __future__ import annotations

import argparse
import sys

from onnxflops.commands.common import add_command, check_output_path, shapes_of
from onnxflops.errors import OnnxFlopsError


def register(sub) -> None:
    p = add_command(
        sub, "survey", "count every model of registries, each against its framework's own count",
        "Count every model SOURCE names (torchvision, timm, transformers, a folder of .onnx "
        "files, or package.module:factory specs; SOURCE:PATTERN keeps the names matching a shell "
        "pattern), one process per model, and hold each count against FlopCounterMode and "
        "parameters(). One row per model, with a verdict: exact, differs, not counted, oracle "
        "failed or not built.", model=None)
    p.add_argument("sources", nargs="*", metavar="SOURCE[:PATTERN]")
    from onnxflops.survey.store import output_suffixes  # the formats of onnxflops.formats

    p.add_argument("-o", "--output", metavar="FILE",
                   help=f"write the rows to FILE ({output_suffixes()}) as they finish; a rerun "
                        "with the same FILE skips the models already in it")
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                   help="models counted at once, each in its own process (default 1)")
    p.add_argument("--memory-gb", type=float, default=6.0, metavar="GB",
                   help="memory each model's process may take (its private writable memory, not "
                        "the libraries it maps; default 6); models whose "
                        "weights would not fit are built on the meta device")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="seconds each model's process may run (default 600)")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="run the rows as Ray tasks on the cluster at ADDRESS ('auto': start a "
                        "local Ray); pip install 'onnxflops[cluster]'")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=DIMS",
                   help="an input shape for factory specs (repeatable)")
    p.add_argument("--llm", action="store_true",
                   help="serving rows of every transformers type with a causal-LM class "
                        "(SOURCE transformers[:PATTERN]): prefill and first/last decode MACs, "
                        "params total and active, KV bytes, against the HF model's own passes "
                        "and hand counts")
    p.add_argument("--list", action="store_true", help="print the models it would count, and stop")
    p.add_argument("--summary", action="store_true",
                   help="the SOURCEs are survey files: print a table of their totals per "
                        "verdict, then the most common reasons of each, and stop")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from onnxflops.survey import (LLM_COLUMNS, render, summary_table, summary_text, survey,
                                  tasks)

    if args.summary:
        print(summary_table(args.sources))
        return 0
    if not args.sources:
        raise OnnxFlopsError("survey: name at least one SOURCE (torchvision, timm, transformers, "
                             "a folder of .onnx files or a package.module:factory spec)")
    if args.jobs < 1 or args.memory_gb <= 0 or args.timeout <= 0:
        raise OnnxFlopsError("survey: --jobs, --memory-gb and --timeout must be positive")
    shapes = shapes_of(args.input)
    if args.list:
        for task in tasks(args.sources, shapes, args.llm):
            print(task.label)
        return 0
    if args.output:
        check_output_path(args.output, "-o")
    rows = survey(args.sources, args.output, jobs=args.jobs, memory_gb=args.memory_gb,
                  timeout=args.timeout, ray=args.ray, inputs=shapes, llm=args.llm,
                  progress=not args.quiet and sys.stderr.isatty())
    if args.output is None:
        sys.stdout.write(render(rows, ".md", LLM_COLUMNS if args.llm else None))
    else:
        print(summary_text(rows))
    return 0
