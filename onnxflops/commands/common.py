"""Options several subcommands share."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from onnxflops import formats
from onnxflops.bind import parse_input_spec
from onnxflops.errors import OnnxFlopsError


# What a command's MODEL may be: the kinds of onnxflops.sources, in one wording.
MODEL_SOURCES = ("an .onnx file; or a .keras/.h5/.pt2 file, a SavedModel directory or a "
                 "package.module:factory spec, converted first")


def add_command(sub, name: str, summary: str, description: str, *,
                model: str | None = MODEL_SOURCES, inputs: bool = False,
                conversion: bool = False, convention: bool = False, rows: str | None = None,
                page: str = "the tables as a self-contained page") -> argparse.ArgumentParser:
    """A subcommand's parser with the flags commands share, each meaning the same everywhere:
    `model` the positional MODEL's help (None: the command declares its own); `inputs`: --input
    and --batch; `conversion`: --exporter and --unsafe; `convention`: --convention; `rows`: the
    output formats, --json, --csv (one row per `rows`), --markdown and --html FILE (`page`).
    The shared flags are listed in groups of their own, after the command's own options."""
    p = sub.add_parser(name, help=summary, description=description)
    if model is not None:
        p.add_argument("model", help=model)
    if inputs:
        add_input_options(p.add_argument_group("inputs"))
    if conversion:
        add_conversion_options(p.add_argument_group("conversion of a framework model"))
    if convention:
        add_convention_option(p)
    if rows is not None:
        add_format_options(p.add_argument_group("output"), rows, page)
    return p


def add_input_options(parser) -> None:
    parser.add_argument("--input", "-i", action="append", default=[], metavar="NAME=DIMS[:DTYPE]",
                        help="bind an input's shape, e.g. --input input=1x3x224x224 (repeatable); "
                             "a model converted first takes the dtype given, e.g. "
                             "--input input_ids=1x128:int64")
    parser.add_argument("--batch", "-b", type=int, metavar="N",
                        help="bind every dynamic leading (batch) dim to N")


def add_convention_option(parser) -> None:
    from onnxflops.costs import CONVENTIONS  # only the commands that count load the cost table

    parser.add_argument("--convention", "-c", choices=list(CONVENTIONS), default="default",
                        help="what FLOPs means: " + "; ".join(f"{k}: {v}"
                                                             for k, v in CONVENTIONS.items()))


def input_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    return shapes_of(args.input)


def shapes_of(specs: list[str], option: str = "--input") -> dict[str, tuple[int, ...]]:
    """NAME=DIMS specs by name; naming an input twice is an error, not the last one winning."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, shape = parse_input_spec(spec)
        if name in shapes:
            raise OnnxFlopsError(f"{option} names input '{name}' twice")
        shapes[name] = shape
    return shapes


def add_conversion_options(p) -> None:
    p.add_argument("--exporter", choices=["dynamo", "legacy"], default="dynamo",
                   help="torch exporter: torch.export based (default) or the TorchScript one")
    p.add_argument("--unsafe", action="store_true",
                   help="let Keras files with Lambda layers and .pt2 archives with pickled objects "
                        "load (runs code stored in the file: only for files you trust)")


def add_format_options(p, rows: str, page: str = "the tables as a self-contained page") -> None:
    """The output options, alike in every command: --json, --csv (one row per `rows`) or
    --markdown print that instead of the table; --html FILE also writes an HTML page."""
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the JSON document")
    fmt.add_argument("--csv", action="store_true", help=f"print one CSV row per {rows}")
    fmt.add_argument("--markdown", action="store_true", help="print Markdown")
    p.add_argument("--html", metavar="FILE",
                   help=f"also write an HTML page ({page}) to FILE ('-' for standard output)")


def output_format(args: argparse.Namespace) -> str:
    """The format the output options chose: one of formats.FORMATS, a table by default."""
    return next((fmt for fmt in ("json", "csv", "markdown") if getattr(args, fmt, False)),
                "table")


def print_result(result: Any, args: argparse.Namespace, view: dict | None = None,
                 rows: dict | None = None,
                 page: Callable[[Any], str] | None = None) -> None:
    """Print `result` in the format the options chose, through onnxflops.formats: `view` shapes
    its table (text, Markdown, HTML), `rows` its CSV rows. With --html, also write `page(result)`
    (default: the tables as a page), once the output is printed."""
    fmt = output_format(args)
    out = formats.write(result, fmt, **((rows if fmt == "csv" else view) or {}))
    sys.stdout.write(out if out.endswith("\n") else out + "\n")
    target = getattr(args, "html", None)
    if target:
        write_text(target, page(result) if page else formats.to_html(result, **(view or {})))


def check_page_path(args: argparse.Namespace) -> None:
    """Before any work: --html FILE, where given, can be written."""
    if getattr(args, "html", None):
        check_output_path(args.html, "--html")


def write_text(target: str, text: str) -> None:
    """`text` to the file `target`, or to standard output for '-'; one line if it cannot be."""
    if target == "-":
        sys.stdout.write(text)
        return
    try:
        Path(target).write_text(text, encoding="utf-8")
    except OSError as e:
        raise OnnxFlopsError(f"{target}: cannot write ({e.strerror})") from None


def check_output_path(target: str, option: str) -> None:
    """Fail before any work, in one line, when `target` ('-': standard output) cannot be written:
    a missing directory, a directory, a read-only place. Nothing is left behind."""
    if target == "-":
        return
    path = Path(target)
    if path.is_dir():
        raise OnnxFlopsError(f"{option} {target}: is a directory")
    if not path.parent.is_dir():
        raise OnnxFlopsError(f"{option} {target}: directory '{path.parent}' does not exist")
    existed = path.exists()
    try:
        with open(path, "a"):
            pass
    except OSError as e:
        raise OnnxFlopsError(f"{option} {target}: cannot be written ({e.strerror})") from None
    if not existed:
        path.unlink()
