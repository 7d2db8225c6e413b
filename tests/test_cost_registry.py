"""The cost table: one registry, each op's backward beside its forward, and no way back from a
rule to the table but through the counter."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from onnxflops.costs import Cost, Registry

ACME = "com.acme"
COSTS = Path(__file__).resolve().parent.parent / "onnxflops" / "costs"


def scale(n) -> Cost:
    """2·numel(X)"""
    return Cost(flops=2 * n.input(0).numel)


def scale_backward(n, grads) -> Cost:
    """3·numel(X)"""
    return Cost(flops=3 * n.input(0).numel)


def test_a_backward_needs_a_forward_and_only_one():
    table = Registry()
    with pytest.raises(ValueError, match="backward rule for com.acme::Scale, which has no forward"):
        table.register_backward("Scale", domain=ACME)(scale_backward)
    table.register("Scale", domain=ACME, category="other")(scale)
    table.register_backward("Scale", domain=ACME)(scale_backward)
    assert table.lookup(ACME, "Scale").backward.formula == scale_backward.__doc__.splitlines()[0]
    with pytest.raises(ValueError, match="duplicate backward rule for com.acme::Scale"):
        table.register_backward("Scale", domain=ACME)(scale_backward)
    with pytest.raises(ValueError, match="duplicate cost rule for com.acme::Scale"):
        table.register("Scale", domain=ACME, category="other")(scale)


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize("leaf", ["node.py", "cost.py"])
def test_the_node_view_and_the_cost_never_import_the_table(leaf):
    # A rule of a composite op reaches the table through the counter (Node.cost_of → Engine).
    own = {m for m in imported_modules(COSTS / leaf) if m.startswith("onnxflops.costs")}
    assert own <= {"onnxflops.costs.cost"}
