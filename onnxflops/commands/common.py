"""Options several subcommands share."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

from onnxflops import formats
from onnxflops.bind import parse_input_spec
from onnxflops.errors import OnnxFlopsError


def model_sources(converted_only: bool = False) -> str:
    """What a command's MODEL may be: an .onnx file, or each kind sources.KINDS offers, by its
    description (a kind added there is in every command's help)."""
    from onnxflops.sources import KINDS, ONNX  # commands that count import it anyway

    converted = "; ".join(kind.name for kind in KINDS if kind.offered and kind is not ONNX)
    return converted if converted_only else f"an .onnx file; or, converted first: {converted}"


def add_command(sub, name: str, summary: str, description: str, *,
                model: str | None = "", inputs: bool = False,
                conversion: bool = False, convention: bool = False, rows: str | None = None,
                page: str = "the tables as a self-contained page", page_names: tuple[str, ...] = (),
                page_default: str | None = None) -> argparse.ArgumentParser:
    """A subcommand's parser with the flags commands share, each meaning the same everywhere:
    `model` the positional MODEL's help ("": what model_sources lists; None: the command declares
    its own); `inputs`: --input
    and --batch; `conversion`: --exporter and --unsafe; `convention`: --convention; `rows`: the
    output formats, one option per format (add_format_options: a CSV row is one per `rows`, the
    page holds `page`, also as `page_names`, by default into `page_default`).
    The shared flags are listed in groups of their own, after the command's own options."""
    p = sub.add_parser(name, help=summary, description=description)
    if model is not None:
        p.add_argument("model", help=model or model_sources())
    if inputs:
        add_input_options(p.add_argument_group("inputs"))
    if conversion:
        add_conversion_options(p.add_argument_group("conversion of a framework model"))
    if convention:
        add_convention_option(p)
    if rows is not None:
        add_format_options(p.add_argument_group("output"), rows, page, page_names, page_default)
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


def add_graph_option(p) -> None:
    """Which graph a framework model runs as, where a command runs it (sources.to_run)."""
    p.add_argument("--graph", choices=["deployed", "counted"], default="deployed",
                   help="what runs for a framework model: deployed (default) the graph its own "
                        "export gives a user (torch.onnx.export's default optimization, "
                        "tf2onnx's default conversion), times joined to the counted graph; "
                        "counted the structure graph counting reads. An .onnx file runs as it is")


def add_format_options(p, rows: str, page: str = "the tables as a self-contained page",
                       page_names: tuple[str, ...] = (), page_default: str | None = None) -> None:
    """The output options, alike in every command, one per format of onnxflops.formats:
    `--FORMAT [FILE]` writes that format to FILE, or with no FILE (or '-') prints it in place of
    the table; a page format (`--html FILE`) takes a FILE ('-': standard output). `rows`: what
    a CSV row is; `page`: what the page holds; `page_names`, `page_default`: other option names
    for the page and the file it goes to unasked (the report command's --output)."""
    for fmt in formats.names():
        found = formats.writer(fmt)
        if fmt == formats.DEFAULT:
            continue
        what = found.describes.format(rows=rows, page=page)
        if found.page:
            p.add_argument(f"--{fmt}", *page_names, dest=fmt, metavar="FILE", default=page_default,
                           action=_Target,
                           help=f"write {what} to FILE ('-' for standard output)"
                                + (f" (default {page_default})" if page_default else ""))
        else:
            p.add_argument(f"--{fmt}", nargs="?", const="-", metavar="FILE", action=_Target,
                           help=f"write {what} to FILE; with no FILE (or '-'), print it in place "
                                "of the table")


class _Target(argparse.Action):
    """A format option's target, and the name it was given by (`--output` for `--html`)."""

    def __call__(self, parser, namespace, value, option_string=None):
        setattr(namespace, self.dest, value)
        named = dict(getattr(namespace, "output_options", None) or {})
        # A short option is told by its long name (-o by --output).
        named[self.dest] = option_string if option_string.startswith("--") else \
            [o for o in self.option_strings if o.startswith("--")][-1]
        namespace.output_options = named


def chosen_outputs(args: argparse.Namespace) -> dict[str, str]:
    """The formats the output options ask for, each with its target ('-': standard output)."""
    return {fmt: getattr(args, fmt) for fmt in formats.names() if getattr(args, fmt, None)}


def check_output_options(args: argparse.Namespace) -> None:
    """Before any work: at most one format to standard output, and every FILE writable."""
    chosen = chosen_outputs(args)
    printed = [f"--{fmt}" for fmt, target in chosen.items() if target == "-"]
    if len(printed) > 1:
        raise OnnxFlopsError(f"{' and '.join(printed)} both print to standard output: give all "
                             "but one a FILE")
    named = getattr(args, "output_options", None) or {}
    for fmt, target in chosen.items():
        check_output_path(target, named.get(fmt) or f"--{fmt}")


def render(result: Any, fmt: str, view: dict | None = None, rows: dict | None = None,
           page: Callable[[Any], str] | None = None) -> str:
    """`result` in `fmt` through onnxflops.formats: `view` shapes its table (text, Markdown,
    HTML), `rows` its rows (CSV); `page(result)`, where given, is the command's own page."""
    found = formats.writer(fmt)
    if found.page and page is not None:
        return page(result)
    return formats.write(result, fmt, **((rows if found.reads == "rows" else view) or {}))


def print_result(result: Any, args: argparse.Namespace, view: dict | None = None,
                 rows: dict | None = None, page: Callable[[Any], str] | None = None,
                 printed: str | None = formats.DEFAULT) -> None:
    """Print `result` in the format the options send to standard output (`printed`, a table,
    by default; None: nothing), then write each format the options send to a FILE."""
    chosen = chosen_outputs(args)
    printed = next((fmt for fmt, target in chosen.items() if target == "-"), printed)
    if printed is not None:
        out = render(result, printed, view, rows, page)
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    for fmt, target in chosen.items():
        if target != "-":
            write_text(target, render(result, fmt, view, rows, page))


def model_after_format(argv: list[str]) -> list[str]:
    """`--json MODEL` (a format option before the model, from when it took no FILE) means
    --json to standard output: a word after a format option that names a model is the model."""
    streams = {f"--{fmt}" for fmt in formats.names() if not formats.writer(fmt).page}
    return [f"{word}=-" if word in streams and i + 1 < len(argv)
            and _names_a_model(argv[i + 1]) else word for i, word in enumerate(argv)]


def _names_a_model(word: str) -> bool:
    """An .onnx path, a source the source seam converts, or an LLM's config.json (or folder):
    never a FILE a format is written to."""
    from onnxflops.sources import ONNX, kind_of

    path = Path(word)
    return path.suffix.lower() == ".onnx" or path.name == "config.json" or \
        (path / "config.json").is_file() or kind_of(word) is not ONNX


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
