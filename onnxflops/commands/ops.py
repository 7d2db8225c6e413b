"""`onnxflops ops`: the cost table itself, one row per costed op, with the formula it applies."""

from __future__ import annotations

import argparse
import json
import sys

from onnxflops.commands.common import add_command
from onnxflops.costs import CONVENTIONS, PER_OP_CONVENTIONS, REGISTRY
from onnxflops.graph import domain_key
from onnxflops.results import text_table


def register(sub) -> None:
    p = add_command(sub, "ops", "list every costed op with its category and formula",
                    "List every op the cost table prices: its domain, category and the formula "
                    "it applies. This is the reference of the counting conventions.", model=None)
    p.add_argument("--domain", metavar="DOMAIN",
                   help="only this domain ('' or ai.onnx for the default one, com.microsoft, "
                        "ai.onnx.ml, ...)")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list of {domain, op_type, category, formula}")
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


def run(args: argparse.Namespace) -> int:
    rows = table(args.domain, args.backward, args.convention)
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
        return 0
    lines = ["Conventions: " + "; ".join(f"{k}: {v}" for k, v in CONVENTIONS.items()), ""]
    lines += text_table(None, [[_name(r), r["category"], r["formula"]] for r in rows], left=3)
    lines.append(f"\n{len(rows)} ops")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _name(row: dict) -> str:
    return f"{row['domain']}::{row['op_type']}" if row["domain"] else row["op_type"]
