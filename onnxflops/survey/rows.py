"""A survey row: its columns, and the verdict that holds our count against the oracle's.

Verdicts: `exact` (MACs equal the oracle's, params + unused_params equal its params, unused_params
and buffers equal its own where it has them, nothing left uncosted); `differs` (counted, but one of those fails: the reason says which and by how much);
`not counted` (our conversion or count failed); `oracle failed` (the framework's own check failed
or there is none, as for an .onnx file, or it is wrong: it missed work that a hand formula finds,
and with that work the count is exact); `not built` (the registry's builder or config fails, or
the model's own forward pass fails on its inputs, so that neither the oracle nor the count runs).
"""

from __future__ import annotations

import re
from collections import Counter

COLUMNS = ("model", "input", "macs", "flops", "params", "unused_params", "foldable_macs",
           "buffers", "bytes", "oracle_macs", "oracle_params", "verdict", "reason", "seconds",
           "peak_mb",
           # Where the oracle has them (Keras's): the trainable weights its forward never reads,
           # and the non-trainable weights; blank where it has not (torch's).
           "oracle_unused_params", "oracle_buffers",
           # A twin from another framework that computes the same network (a keras-hub backbone's
           # transformers model): its name, its oracle's MACs, and whether they equal ours.
           "twin", "twin_macs", "twin_agrees")
NUMERIC = ("macs", "flops", "params", "unused_params", "foldable_macs", "buffers", "bytes",
           "oracle_macs", "oracle_params", "oracle_unused_params", "oracle_buffers", "twin_macs")
VERDICTS = ("exact", "differs", "not counted", "oracle failed", "not built")
# A row of the serving survey (`survey transformers --llm`, survey.llm): prefill and the first and
# last decode steps against the HF model's own passes, params total and active, KV cache bytes,
# each beside its oracle or hand count, and the kinds of attention and experts they were met on.
LLM_COLUMNS = ("model", "prompt", "generated", "attention", "experts", "prefill_macs",
               "decode_first_macs", "decode_last_macs", "oracle_prefill_macs",
               "oracle_decode_first_macs", "oracle_decode_last_macs", "params_total",
               "params_active", "oracle_params", "hand_params_active", "kv_bytes",
               "hand_kv_bytes", "oracle", "verdict", "reason", "seconds", "peak_mb")
LLM_NUMERIC = tuple(c for c in LLM_COLUMNS if c.endswith(("macs", "params", "bytes", "active",
                                                            "total"))
                    or c in ("prompt", "generated"))


def blank_row(model: str) -> dict:
    return {**dict.fromkeys(COLUMNS), "model": model, "input": "", "reason": ""}


def judge(row: dict, uncosted: str = "", failures: dict[str, str] | None = None,
          bound: str = "", missed: dict[str, int] | None = None,
          discarded: dict[str, int] | None = None) -> dict:
    """`row` with its verdict and reason set.

    `uncosted`: a summary of the nodes the count left uncosted ('' when none); `failures`: the
    error message of each stage (build, count, oracle) that failed; `bound`: a note that some
    nodes were counted at an upper bound, or that the trace holds one path of a model that
    branches on data, added to the reason of a row that is not exact;
    `missed`: the MACs the oracle did not count, by kind of module, derived by hand. A count equal
    to the oracle's with them is `oracle failed`, the reason saying why: the oracle was wrong.
    `discarded`: the MACs the oracle counts in modules whose output the forward's result never
    reads, by module (oracle.discarded_work); a count equal to the oracle's without them is
    `oracle failed` too.
    """
    failures = failures or {}
    if (missed or discarded) and not failures and not uncosted:
        wrong = oracle_wrong(row, missed or {}, discarded or {})
        if wrong:
            return {**row, "verdict": "oracle failed", "reason": wrong}
    row = dict(row)
    if "build" in failures:
        row.update(verdict="not built", reason=failures["build"])
        return row
    if "count" in failures:
        if "oracle" in failures:  # the framework cannot run it either: the model, not the count
            row.update(verdict="not built", reason=f"its forward fails: {failures['oracle']}; "
                                                   f"count: {failures['count']}")
        else:
            row.update(verdict="not counted", reason=failures["count"])
        return row
    problems = []
    if "oracle" in failures:
        problems.append(f"oracle: {failures['oracle']}")
    else:
        if row["macs"] != row["oracle_macs"]:
            problems.append(f"MACs {_difference(row['macs'], row['oracle_macs'])}")
            if missed:
                problems.append(_missed_note(missed))
        elif missed:  # equal to an oracle that missed work: the count missed it too
            problems.append(f"MACs equal the oracle's, but {_missed_note(missed)}")
        ours = (row["params"] or 0) + (row["unused_params"] or 0)
        if ours != row["oracle_params"]:
            problems.append(f"params {_difference(ours, row['oracle_params'])}")
        for ours, theirs in (("unused_params", "oracle_unused_params"),
                             ("buffers", "oracle_buffers")):
            if row.get(theirs) is not None and (row[ours] or 0) != row[theirs]:
                problems.append(f"{ours.replace('_', ' ')} "
                                f"{_difference(row[ours] or 0, row[theirs])}")
    if uncosted:
        problems.append(uncosted)
    verdict = "oracle failed" if "oracle" in failures else "differs" if problems else "exact"
    if problems and bound:
        problems.append(bound)
    row.update(verdict=verdict, reason="; ".join(problems))
    return row


def oracle_wrong(row: dict, missed: dict[str, int], discarded: dict[str, int] | None = None
                 ) -> str:
    """Why the oracle is wrong where the count equals it plus the work it missed (checked by the
    hand formula) less the work it counts that the forward discards, and params agree; '' where
    they do not."""
    discarded = discarded or {}
    ours = (row["params"] or 0) + (row["unused_params"] or 0)
    if row["macs"] != (row["oracle_macs"] or 0) + sum(missed.values()) - sum(discarded.values()) \
            or ours != row["oracle_params"]:
        return ""
    if not discarded:
        return f"oracle wrong: {_missed_note(missed)}; with them the count is exact"
    if not missed:
        return f"oracle wrong: {_discarded_note(discarded)}; without it the count is exact"
    return (f"oracle wrong: {_missed_note(missed)}; {_discarded_note(discarded)}; with the one "
            "and without the other the count is exact")


def _discarded_note(discarded: dict[str, int]) -> str:
    modules = ", ".join(f"{macs:,} MACs in {name}" for name, macs in sorted(discarded.items()))
    return (f"FlopCounterMode counts {modules}, work whose output the forward's result never "
            "reads (no output depends on it; the exported graph drops it)")


# How each kind of work FlopCounterMode misses is counted by hand (survey.oracle).
_HAND_FORMULAS = {"cdist": "B·P·R·(M+2), ATen's matrix-product form"}
_RECURRENT_FORMULA = "gates·H·(I+P) per step, layer and direction"


def _missed_note(missed: dict[str, int]) -> str:
    kinds = ", ".join(f"{macs:,} of {kind}" for kind, macs in sorted(missed.items()))
    formulas = "; ".join(dict.fromkeys(_HAND_FORMULAS.get(kind, _RECURRENT_FORMULA)
                                       for kind in sorted(missed)))
    return f"FlopCounterMode missed {kinds} MACs (by hand: {formulas})"


def _difference(ours: int, theirs: int) -> str:
    if not theirs:
        return f"{ours - theirs:+,} (oracle {theirs:,})"
    return f"{ours - theirs:+,} ({(ours - theirs) / theirs:+.2%})"


def totals(rows: list[dict]) -> dict[str, int]:
    """How many rows have each verdict, every verdict listed."""
    counts = Counter(r["verdict"] for r in rows)
    return {v: counts.get(v, 0) for v in VERDICTS}


_NUMBER = re.compile(r"(?<![\w.])([-+]?)\d[\d,._]*(%?)")
# The names of a row's own model, nodes and values; an op's name stays (it is the failure's class).
_QUOTED = re.compile(r"\b(model|of|node|input|output|value|tensor) '[^']*'")


def reason_class(reason: str) -> str:
    """A reason with its numbers and quoted names taken out, so that rows failing alike share one
    class: its uncosted nodes where it has some (what to fix first), else its first problem.
    Signs stay: MACs short (-N) and over (+N) are different failures."""
    parts = reason.split("; ")
    first = next((p for p in parts if "uncosted" in p), parts[0]).split(": ")
    first = ": ".join(first[:3]) if "uncosted" in first[0] else ": ".join(first)
    return _NUMBER.sub(r"\1N\2", _QUOTED.sub(r"\1 '…'", first))[:140]


def top_reasons(rows: list[dict], n: int = 15) -> list[tuple[str, str, int]]:
    """(verdict, reason class, rows) for the most common failures, most rows first."""
    counts = Counter((r["verdict"], reason_class(r["reason"] or "")) for r in rows
                     if r["verdict"] != "exact")
    return [(v, reason, k) for (v, reason), k in counts.most_common(n)]
