"""The answer in words: per model its latency, FLOPs, achieved rate and where the time goes; per
pair of models why the latency ratio is not the FLOPs ratio.

Written once, here, from the Profile the plots draw (its latency, count, executed rows in plain
categories and ceilings): `profile`'s text, the JSON's `summary` and the report's page all print
these sentences. (A profile here is a measure.Profile, a group a measure.Rollup: measure
imports this module, so their names are not imported back.)
"""

from __future__ import annotations

from itertools import combinations
from typing import Sequence

from onnxflops.profiling.ceilings import Ceilings
from onnxflops.results import human

# A category named in a model's sentence takes at least this share of its time; the others are
# summed as the rest.
SHOWN_SHARE = 0.05
# A category named as a reason in a pair's sentence grew by at least this share of the time
# (else the one that grew most), at most MOST_REASONS of them.
GROWN_SHARE = 0.05
MOST_REASONS = 3
# Rates within this of each other are the same rate: the latency ratio is the FLOPs ratio.
SAME_RATE = 0.05


def sentences(profiles: Sequence) -> list[str]:
    """One paragraph per model, then one sentence per pair of models."""
    return [" ".join(model_sentences(p)) for p in profiles] + \
        [pair_sentence(a, b) for a, b in combinations(profiles, 2)]


def model_sentences(p) -> list[str]:
    """Latency, FLOPs and achieved rate (against the peak); then each category's share of the
    time (those of SHOWN_SHARE or more, the rest summed) and the memory-bound share."""
    median = p.latency.median
    # Two decimals, or three significant digits under a millisecond (0.0381 ms, not 0.04).
    first = f"{p.model} runs in {median:.2f}" if median >= 1 else f"{p.model} runs in {median:.3g}"
    first += f" ms (median) for {human(p.flops, 'FLOPs')}"
    if p.achieved_flops_per_s:
        first += f": {human(p.achieved_flops_per_s, 'FLOP/s')}"
        if p.efficiency is not None:
            first += (f", {_percent(p.efficiency)} of the "
                      f"{human(p.ceilings.peak_flops_per_s, 'FLOP/s')} peak")
    said = [first + "."]
    groups = p.by_category()
    timed = sum(g.time_ms for g in groups.values())
    if not timed:
        return said
    named = [f"{name} {_percent(g.latency_share)}" for name, g in groups.items()
             if g.latency_share >= SHOWN_SHARE]
    rest = sum(g.latency_share for g in groups.values() if g.latency_share < SHOWN_SHARE)
    if round(100 * rest):
        named.append(f"the rest {_percent(rest)}")
    second = f"Its time goes to {_listed(named)}"
    if p.ceilings is not None:
        memory = sum(n.time_ms or 0.0 for n in p.nodes if n.bound == "memory") / timed
        second += f"; {_percent(memory)} of it in memory-bound work"
    return said + [second + "."]


def pair_sentence(a, b) -> str:
    """B, the one with fewer FLOPs, against A: N = F_A/F_B, M = T_A/T_B, and since T = F/R,
    M = N·R_B/R_A: the rate that changed, then the categories whose share of time grew most and
    their rates against the roofs."""
    if b.flops > a.flops:
        a, b = b, a
    speed = a.latency.median / b.latency.median
    faster = f"runs {speed:.1f}× faster" if speed >= 1 else f"runs {1 / speed:.1f}× slower"
    if not b.flops:
        return f"{b.model} has no FLOPs counted and {faster} than {a.model}."
    fewer = a.flops / b.flops
    said = f"{b.model} has {fewer:.1f}× fewer FLOPs than {a.model} and {faster}"
    rate = speed / fewer  # R_B / R_A
    rates = f"{human(b.achieved_flops_per_s, 'FLOP/s')} against " \
            f"{human(a.achieved_flops_per_s, 'FLOP/s')}"
    if abs(rate - 1) < SAME_RATE:
        return f"{said}, as its FLOPs predict: both run at about the same rate ({rates})."
    share = f"{_percent(rate)} of" if rate < 1 else f"{rate:.1f}×"
    said += f", because it runs at {share} {a.model}'s FLOP/s ({rates})"
    reasons = _grown(a, b)
    if not reasons:
        return said + "."
    return said + ": " + "; ".join(reasons) + "."


def _grown(a, b) -> list[str]:
    """The categories whose share of B's time grew most over A's, each with its shares and its
    rate in B against B's roofs."""
    before, after = a.by_category(), b.by_category()
    if not sum(g.time_ms for g in after.values()) or not sum(g.time_ms for g in before.values()):
        return []
    growth = sorted(((g.latency_share - (before[name].latency_share if name in before else 0.0),
                      name) for name, g in after.items()), reverse=True)
    chosen = [(d, name) for d, name in growth if d >= GROWN_SHARE][:MOST_REASONS] \
        or [(d, name) for d, name in growth[:1] if d > 0]
    said = []
    for _, name in chosen:
        was = before[name].latency_share if name in before else 0.0
        said.append(f"{name} takes {_percent(after[name].latency_share)} of its time against "
                    f"{_percent(was)} in {a.model}, {against_roof(after[name], b.ceilings)}")
    return said


def against_roof(g, c: Ceilings | None) -> str:
    """A category's achieved rate and, under ceilings, its bound and its share of the roof at its
    intensity: achieved / min(peak, intensity·bandwidth); without FLOPs, bytes/s / bandwidth."""
    seconds = g.time_ms / 1e3
    if not g.flops:
        if not g.bytes or not seconds:
            return "with no counted work"
        moved = g.bytes / seconds
        roof = "" if c is None else f", {_percent(moved / c.bandwidth_bytes_per_s)} of the " \
                                    "bandwidth roof"
        return f"moving {human(moved, 'B/s')}{roof}"
    rate = human(g.achieved_flops_per_s, "FLOP/s")
    if c is None:
        return f"at {rate}"
    bound = c.bound(g.flops, g.bytes)
    roof = "the bandwidth roof" if bound == "memory" else "the peak"
    return f"{bound}-bound at {rate}, " \
           f"{_percent(g.achieved_flops_per_s / c.attainable(g.flops, g.bytes))} of {roof}"


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _percent(share: float) -> str:
    """Whole percents; under 1%, one significant digit (0.3%), so that a small share is not 0%."""
    value = 100 * share
    return f"{value:.1g}%" if 0 < value < 0.95 else f"{value:.0f}%"
