"""Dims: an int, a symbol while unbound, or None when unknown; their text and sympy forms.

A symbolic dim travels through the model as a dim_param marked with '$': '$batch' for an input dim
left unbound, '$4*batch' for a dim computed from them. sympy is imported only when a model has one.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

import numpy as np

from onnxflops.caches import memoized

Dim = Any  # int, a symbol name (str) while unbound, or None when unknown

# A dim_param starting with this is a symbolic dim: rules get it as a sympy expression.
SYMBOL_MARK = "$"
INT64_MAX = 2**63 - 1  # the largest dim (or element count) an ONNX tensor can have

# Names sympy prints in the formulas written here: a dim named so gets a trailing underscore.
_FUNCTIONS = frozenset({"floor", "ceiling", "Max", "Min", "Mod", "Abs"})
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def is_symbolic(d: Dim) -> bool:
    return isinstance(d, str) and d.startswith(SYMBOL_MARK)


def format_shape(shape: tuple[Dim, ...] | None) -> str:
    if shape is None:
        return "?"
    return "x".join("?" if d is None else str(d).lstrip(SYMBOL_MARK) for d in shape) \
        if shape else "scalar"


def symbol_name(name: str) -> str:
    """A dim_param turned into a name sympy prints and parses back unchanged."""
    name = re.sub(r"\W", "_", name) or "dim"
    if name[0].isdigit():
        name = "d_" + name
    return name + "_" if keyword.iskeyword(name) or name in _FUNCTIONS else name


@memoized(maxsize=4096)
def to_expr(dim: str) -> Any:
    """'$4*batch' → the sympy expression 4·batch, its symbols positive integers."""
    import sympy

    text = dim[len(SYMBOL_MARK):]
    names = {n: sympy.Symbol(n, integer=True, positive=True)
             for n in _IDENTIFIER.findall(text) if n not in _FUNCTIONS}
    expr = sympy.parse_expr(text, local_dict=names)
    return int(expr) if expr.is_Integer else expr


def to_dim(value: Any) -> int | str | None:
    """An int, a sympy expression or None as a dim: int, marked dim_param, or unknown."""
    if value is None or isinstance(value, (int, np.integer)):
        return None if value is None else int(value)
    if value.is_Integer:
        return int(value)
    return SYMBOL_MARK + str(value)
