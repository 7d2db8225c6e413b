"""Small helpers shared by the Keras and PyTorch converters."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np


def is_single_input(value) -> bool:
    """A lone shape (a sequence of ints) or a lone array, as opposed to a sequence of them."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return True
    return isinstance(value, Sequence) and all(isinstance(d, (int, np.integer)) for d in value)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def first_line(e: BaseException) -> str:
    """The first non-blank line of an exception message: converters report one line."""
    lines = [line.strip() for line in _ANSI.sub("", str(e)).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


def last_line(e: BaseException) -> str:
    """The last non-blank line: TensorFlow puts the traced call stack first, the error last."""
    lines = [line.strip() for line in _ANSI.sub("", str(e)).splitlines() if line.strip()]
    return lines[-1] if lines else type(e).__name__


def root_cause(e: BaseException) -> BaseException:
    """The innermost exception of a chain: exporters wrap the one that names the op."""
    while e.__cause__ is not None:
        e = e.__cause__
    return e
