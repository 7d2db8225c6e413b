"""Stand-in weight values that make a converted graph depend on the architecture only.

Exporters rewrite graphs according to weight values: TF's Grappler deletes bias adds whose bias is
all zero and folds fresh BatchNorm statistics away, the legacy torch exporter merges initializers
that happen to be identical. Converting with these stand-ins (distinct, non-zero, positive so that
variances stay valid) gives every model the graph its structure implies, whatever its weights.
"""

from __future__ import annotations

import numpy as np

SEED = 20240531


class StandInValues:
    """A deterministic stream of distinct values in [0.5, 1.5), one array per weight tensor."""

    def __init__(self, seed: int = SEED):
        self._rng = np.random.default_rng(seed)

    def like(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        return self._rng.uniform(0.5, 1.5, size=shape).astype(dtype)


def is_float_dtype(dtype) -> bool:
    """True for the float dtypes of numpy, TensorFlow/Keras (by name) and torch."""
    name = str(dtype).rsplit(".", 1)[-1]
    return name.startswith(("float", "bfloat", "half", "double"))
