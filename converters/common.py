"""Small helpers shared by the Keras and PyTorch converters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def is_single_input(value) -> bool:
    """A lone shape (a sequence of ints) or a lone array, as opposed to a sequence of them."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return True
    return isinstance(value, Sequence) and all(isinstance(d, (int, np.integer)) for d in value)


def first_line(e: BaseException) -> str:
    """The first non-blank line of an exception message: converters report one line."""
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__
