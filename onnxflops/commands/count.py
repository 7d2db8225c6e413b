"""`onnxflops count`: the report for one model."""

from __future__ import annotations

import argparse
import sys

from onnxflops.api import count
from onnxflops.commands.common import (
    add_conversion_options,
    add_format_options,
    add_input_options,
    input_shapes,
)
from onnxflops.costs import CONVENTIONS


def register(sub) -> None:
    p = sub.add_parser("count", help="count MACs, FLOPs, params and bytes of a model",
                       description="Count MACs, FLOPs, params and memory traffic of a model.")
    p.add_argument("model", help="an .onnx file; or a .keras/.h5/.pt2 file, a SavedModel directory or "
                                 "a package.module:factory spec, converted first")
    add_input_options(p)
    add_conversion_options(p)
    p.add_argument("--convention", "-c", choices=list(CONVENTIONS), default="default",
                   help="what FLOPs means: " + "; ".join(f"{k}: {v}" for k, v in CONVENTIONS.items()))
    p.add_argument("--by", choices=["node", "op", "layer", "category"], default="op",
                   help="rows of the table (default: op)")
    p.add_argument("--training", action="store_true",
                   help="also count the backward pass of one training step: backward and "
                        "training (forward + backward) FLOPs")
    p.add_argument("--symbolic", action="store_true",
                   help="keep dims left unbound as symbols: the counts are formulas in them")
    add_format_options(p, "node")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = count(args.model, inputs=input_shapes(args), batch=args.batch,
                   convention=args.convention, training=args.training, symbolic=args.symbolic,
                   exporter=args.exporter, unsafe=args.unsafe)
    if args.json:
        out = report.to_json()
    elif args.csv:
        out = report.to_csv()
    elif args.markdown:
        out = report.to_markdown(args.by)
    else:
        out = report.to_table(args.by)
    sys.stdout.write(out if out.endswith("\n") else out + "\n")
    return 1 if report.uncosted else 0
