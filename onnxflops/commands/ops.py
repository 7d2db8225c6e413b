"""`onnxflops ops`: the cost table itself, one row per costed op, with the formula it applies."""

from __future__ import annotations

import argparse

from onnxflops.commands.common import add_command, check_output_options, print_result
from onnxflops.costs import CONVENTIONS, PER_OP_CONVENTIONS, REGISTRY
from onnxflops.formats import Rows, Table, Text
from onnxflops.graph import domain_key

COLUMNS = ["domain", "op_type", "category", "formula"]


def register(sub) -> None:
    p = add_command(sub, "ops", "list every costed op with its category and formula",
                    "List every op the cost table prices: its domain, category and the formula "
                    "it applies. This is the reference of the counting conventions.", model=None,
                    rows="op", page="the table")
    p.add_argument("--domain", metavar="DOMAIN",
                   help="only this domain ('' or ai.onnx for the default one, com.microsoft, "
                        "ai.onnx.ml, ...)")
    p.add_argument("--backward", action="store_true",
                   help="the formulas of the backward pass (count --training) instead")
    p.add_argument("--convention", choices=sorted(PER_OP_CONVENTIONS),
                   help="the ops a per-op convention prices, with its formula for each (every "
                        "other op costs 0 FLOPs under it)")
    p.set_defaults(func=run)


def table(domain: str | None = None, backward: bool = False,
          convention: str | None = None) -> list[dict]:
    """Every rule (or backward rule, or per-op convention rule) as a row, sorted by domain then
    op type."""
    wanted = None if domain is None else domain_key(domain)
    rules = [r for r in REGISTRY.rules.values() if (r.backward or not backward)
             and (convention is None or r.convention(convention))]
    return [{"domain": r.domain, "op_type": r.op_type, "category": r.category,
             "formula": r.backward.formula if backward else
             r.convention(convention).formula if convention else r.formula}
            for r in sorted(rules, key=lambda r: (r.domain, r.op_type))
            if wanted is None or r.domain == wanted]


class OpTable:
    """The cost table's rows as a result, for every output format (the JSON document is the
    list of {domain, op_type, category, formula})."""

    def __init__(self, rows: list[dict]):
        self.model = "onnxflops ops"
        self.entries = rows

    def to_dict(self) -> list[dict]:
        return self.entries

    def rows(self, **_options) -> Rows:
        return Rows(COLUMNS, self.entries)

    def view(self, **_options) -> list:
        cells = [[_name(r), r["category"], r["formula"]] for r in self.entries]
        widths = [max((len(row[i]) for row in cells), default=0) for i in range(3)]
        return [Text(["Conventions: " + "; ".join(f"{k}: {v}" for k, v in CONVENTIONS.items()),
                      ""]),
                Table(None, cells, left=3, widths=widths), f"\n{len(self.entries)} ops"]


def run(args: argparse.Namespace) -> int:
    check_output_options(args)
    print_result(OpTable(table(args.domain, args.backward, args.convention)), args)
    return 0


def _name(row: dict) -> str:
    return f"{row['domain']}::{row['op_type']}" if row["domain"] else row["op_type"]
