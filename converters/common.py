"""Small helpers shared by the Keras and PyTorch converters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def is_single_input(value) -> bool:
    """A lone shape (a sequence of ints) or a lone array, as opposed to a sequence of them."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return True
    return isinstance(value, Sequence) and all(isinstance(d, (int, np.integer)) for d in value)


def root_cause(e: BaseException) -> BaseException:
    """The innermost exception of a chain: exporters wrap the one that names the op."""
    while e.__cause__ is not None:
        e = e.__cause__
    return e
