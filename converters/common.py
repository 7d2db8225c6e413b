"""Small helpers shared by the Keras and PyTorch converters."""

from __future__ import annotations

import contextlib
import os
import sys
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


@contextlib.contextmanager
def native_output_silenced():
    """Nothing written to the process's stdout and stderr reaches them for the duration, from
    C++ too: TensorFlow's logging on import and on first use, the TorchScript exporter's graph
    dumps. Errors come as exceptions and are reported in one line."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(fd) for fd in (1, 2)]
    with open(os.devnull, "w") as devnull:
        for fd in (1, 2):
            os.dup2(devnull.fileno(), fd)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)
