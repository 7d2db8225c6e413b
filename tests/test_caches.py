"""Memo tables are bounded and registered, so one call empties them all."""

from __future__ import annotations

import re
from pathlib import Path

import onnxflops
from helpers import model, node, weight
from onnxflops.dims import to_expr

PACKAGE = Path(onnxflops.__file__).parent


def test_clear_caches_empties_the_tables_and_counts_stay_the_same():
    # A dense layer over a symbolic batch: 64·32 MACs per row.
    dense = model([node("MatMul", ["X", "W"], ["Y"])], {"X": ["batch", 64]},
                  [weight("W", (64, 32))])
    first = onnxflops.count(dense, symbolic=True).total.macs
    assert to_expr.cache_info().currsize > 0
    onnxflops.clear_caches()
    assert to_expr.cache_info().currsize == 0
    assert onnxflops.count(dense, symbolic=True).total.macs == first
    assert str(first) == "2048*batch"


def test_every_cache_of_the_package_is_a_registered_bounded_one():
    unregistered = [f"{path.relative_to(PACKAGE)}:{n}"
                    for path in PACKAGE.rglob("*.py") if path.name != "caches.py"
                    for n, line in enumerate(path.read_text().splitlines(), 1)
                    if re.search(r"lru_cache|functools\.cache\b|@cache\b", line)]
    assert unregistered == []
