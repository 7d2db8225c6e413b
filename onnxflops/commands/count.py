"""`onnxflops count`: the report for one model."""

from __future__ import annotations

import argparse

from onnxflops.api import count
from onnxflops.commands.common import add_command, check_output_options, input_shapes, print_result
from onnxflops.errors import OnnxFlopsError


def register(sub) -> None:
    p = add_command(sub, "count", "count MACs, FLOPs, params and bytes of a model",
                    "Count MACs, FLOPs, params and memory traffic of a model.", inputs=True,
                    conversion=True, convention=True, rows="node (or --by group)")
    p.add_argument("--by", choices=["node", "op", "layer", "category"],
                   help="rows of the table (default: op) or of the CSV (default: node)")
    p.add_argument("--depth", type=_depth, metavar="N",
                   help="with --by layer (implied): sum the layers N levels down the module tree, "
                        "named as the framework names them (`encoder.layer.0` at depth 3)")
    p.add_argument("--training", action="store_true",
                   help="also count the backward pass of one training step: backward and "
                        "training (forward + backward) FLOPs")
    p.add_argument("--symbolic", action="store_true",
                   help="keep dims left unbound as symbols: the counts are formulas in them")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.depth is not None and args.by not in (None, "layer"):
        raise OnnxFlopsError(f"--depth sums layers: it goes with --by layer, not --by {args.by}")
    check_output_options(args)
    report = count(args.model, inputs=input_shapes(args), batch=args.batch,
                   convention=args.convention, training=args.training, symbolic=args.symbolic,
                   exporter=args.exporter, unsafe=args.unsafe)
    by = args.by or ("layer" if args.depth is not None else None)
    print_result(report, args, view={"by": by or "op", "depth": args.depth},
                 rows={"by": by or "node", "depth": args.depth})
    return 1 if report.uncosted else 0


def _depth(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number from 1")
    return int(text)
