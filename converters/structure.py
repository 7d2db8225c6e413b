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
        # Drawn in float32 and shifted in place: no float64 array of a large weight's size.
        values = self._rng.random(size=shape, dtype=np.float32)
        values += np.float32(0.5)
        return values.astype(dtype, copy=False)


def is_float_dtype(dtype) -> bool:
    """True for the float dtypes of numpy, TensorFlow/Keras (by name) and torch."""
    name = str(dtype).rsplit(".", 1)[-1]
    return name.startswith(("float", "bfloat", "half", "double"))
