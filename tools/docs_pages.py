"""The documentation's pages made from the code, at each `mkdocs build` (an mkdocs hook, named in
mkdocs.yml), so that they can never go stale: the cost table from the registry, the CLI reference
from the argparse parsers."""

from __future__ import annotations

import contextlib
import os
import re

COST_TABLE = "reference/cost-table.md"
CLI = "reference/cli.md"


def _cell(text: str) -> str:
    """Text as a Markdown table cell: nothing in it read as markup."""
    text = re.sub(r"([\\`*_|\[\]])", r"\\\1", text.replace("\n", " "))
    return text.replace("<", "&lt;").replace(">", "&gt;")


def cost_table() -> str:
    """Every op the registry prices: its category, its formula (the rule's docstring's first
    line) and its backward (what `--training` adds)."""
    from onnxflops.commands.ops import table
    from onnxflops.costs import CONVENTIONS

    backward = {(r["domain"], r["op_type"]): r["formula"] for r in table(backward=True)}
    rows = table()
    lines = ["# The cost table", "",
             "Every op onnxflops prices, with the formula its rule applies (the rule's docstring, "
             "in `onnxflops/costs/`) and the formula of its gradient (what `count --training` "
             "adds). This page is generated from the registry at each build of the site; "
             "`onnxflops ops` prints the same table, `onnxflops ops --backward` the backward "
             "column. An op without a backward rule is uncosted in the backward totals.", "",
             "Conventions: " + "; ".join(f"`{k}`: {v}" for k, v in CONVENTIONS.items()), ""]
    by_domain: dict[str, list[dict]] = {}
    for row in rows:
        by_domain.setdefault(row["domain"] or "ai.onnx (the standard domain)", []).append(row)
    for domain, entries in by_domain.items():
        lines += [f"## {domain}", "", f"{len(entries)} ops.", "",
                  "| op | category | formula | backward |", "|---|---|---|---|"]
        lines += [f"| {r['op_type']} | {r['category']} | {_cell(r['formula'])} | "
                  f"{_cell(backward.get((r['domain'], r['op_type']), '(none)'))} |"
                  for r in entries]
        lines.append("")
    return "\n".join(lines)


@contextlib.contextmanager
def _columns(width: int):
    """argparse wraps its help to the terminal's width: a fixed one, so every build is alike."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def cli_reference() -> str:
    """`onnxflops --help` and each command's `--help`, as the parsers say them."""
    from onnxflops.cli import EXIT_BAD_INPUT, EXIT_BUG, parser

    top, commands = parser()
    with _columns(100):
        sections = [("onnxflops", top.format_help())]
        sections += [(f"onnxflops {name}", p.format_help()) for name, p in commands.items()]
    lines = ["# Command-line reference", "",
             "Generated from the command's own parsers at each build of the site: what "
             "`onnxflops COMMAND --help` prints. Exit codes: 0 done; 1 counted, but some nodes "
             f"could not be costed (`compare`: the models differ); {EXIT_BAD_INPUT} bad input, "
             f"said in one line; {EXIT_BUG} a bug in onnxflops (see "
             "[Troubleshooting](../troubleshooting.md)).", ""]
    for title, text in sections:
        lines += [f"## {title}", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)


GENERATED = {COST_TABLE: cost_table, CLI: cli_reference}


def on_files(files, config):
    """mkdocs hook: add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for path, make in GENERATED.items():
        files.append(File.generated(config, path, content=make()))
    return files
