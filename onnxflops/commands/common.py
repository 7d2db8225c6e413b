"""Options several subcommands share."""

from __future__ import annotations

import argparse

from onnxflops.bind import parse_input_spec


def add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", "-i", action="append", default=[], metavar="NAME=DIMS[:DTYPE]",
                        help="bind an input's shape, e.g. --input input=1x3x224x224 (repeatable); "
                             "a model converted first takes the dtype given, e.g. "
                             "--input input_ids=1x128:int64")
    parser.add_argument("--batch", "-b", type=int, metavar="N",
                        help="bind every dynamic leading (batch) dim to N")


def input_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    return dict(parse_input_spec(spec) for spec in args.input)


def add_conversion_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--exporter", choices=["dynamo", "legacy"], default="dynamo",
                   help="torch exporter: torch.export based (default) or the TorchScript one")
    p.add_argument("--unsafe", action="store_true",
                   help="let Keras files with Lambda layers and .pt2 archives with pickled objects "
                        "load (runs code stored in the file: only for files you trust)")


def add_format_options(p: argparse.ArgumentParser, rows: str) -> None:
    """--json, --csv (one row per `rows`) and --markdown, one at a time; a table otherwise."""
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the JSON document")
    fmt.add_argument("--csv", action="store_true", help=f"print one CSV row per {rows}")
    fmt.add_argument("--markdown", action="store_true", help="print Markdown")
