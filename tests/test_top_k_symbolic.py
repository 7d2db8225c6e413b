"""A TopK whose k is computed from a symbolic length (a sparse attention's min(prompt, top-k)
selected keys): its outputs take k's formula on the axis, and its cost is a formula in it."""

from __future__ import annotations

import numpy as np
import sympy

import onnxflops
from helpers import model, node, weight

n = sympy.Symbol("n", integer=True, positive=True)


def _top_min_n_3():
    """X [4, n] → TopK along n of k = min(n, 3), k computed from X's shape; Y = values + 1."""
    nodes = [node("Shape", ["X"], ["shape"]),
             node("Gather", ["shape", "one"], ["length"], axis=0),
             node("Min", ["length", "three"], ["k0"]),
             node("Reshape", ["k0", "to_1"], ["k"]),
             node("TopK", ["X", "k"], ["values", "indices"], axis=-1),
             node("Add", ["values", "values"], ["Y"])]
    constants = [weight("one", (), np.int64, 1), weight("three", (), np.int64, 3),
                 weight("to_1", (1,), np.int64, [1])]
    return model(nodes, {"X": [4, "n"]}, constants, outputs=["Y", "indices"])


def test_top_k_of_a_symbolic_k_takes_its_formula():
    report = onnxflops.count(_top_min_n_3(), symbolic=True)
    by_name = {r.name: r for r in report.nodes}
    # heap of k: 4·n elements each offered at ⌈log2(k + 1)⌉ comparisons, k = min(n, 3)
    for length, k in ((2, 2), (3, 3), (9, 3)):
        top = by_name["values"].flops
        assert sympy.sympify(top).subs(n, length) == 4 * length * int(np.ceil(np.log2(k + 1)))
        # the Add after it reads 4·k values
        assert sympy.sympify(by_name["Y"].flops).subs(n, length) == 4 * k
    assert report.complete
