"""Stand-in weight values that make a converted graph depend on the architecture only.

Exporters rewrite graphs according to weight values: TF's Grappler deletes bias adds whose bias is
all zero and folds fresh BatchNorm statistics away, the legacy torch exporter merges initializers
that happen to be identical. Converting with these stand-ins (distinct, non-zero, positive so that
variances stay valid) gives every model the graph its structure implies, whatever its weights.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

SEED = 20240531


class StandInValues:
    """A deterministic stream of stand-ins: random arrays of values in [0.5, 1.5), one per weight
    tensor (`like`), or one value per weight tensor that fills it (`distinct_scalar`)."""

    def __init__(self, seed: int = SEED, taken: Iterable[np.ndarray] = ()):
        """`taken`: values `distinct_scalar` is not to draw (given as arrays of their dtype)."""
        self._rng = np.random.default_rng(seed)
        self._drawn: dict[str, set[float]] = {}
        for values in taken:
            self._drawn.setdefault(str(values.dtype), set()).update(map(float, values.ravel()))

    def like(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        # Drawn in float32 and shifted in place: no float64 array of a large weight's size.
        values = self._rng.random(size=shape, dtype=np.float32)
        values += np.float32(0.5)
        return values.astype(dtype, copy=False)

    def distinct_arrays(self, sizes: list[int]) -> list[np.ndarray]:
        """float32 arrays of these sizes, values in [0.5, 1.5] but 1, no value in two places: a
        value names the one weight that holds it."""
        total = sum(sizes)
        grid = 1 << 24  # float32 values in [0.5, 1.5): 2^23 per octave
        if total > grid // 2:
            raise ValueError(f"{total} distinct stand-in values asked for, more than kept apart")
        drawn = np.empty(0, dtype=np.float32)
        while drawn.size < total:  # draw more than needed; keep first occurrences, in order
            more = self._rng.random(size=2 * (total - drawn.size) + 16, dtype=np.float32)
            more += np.float32(0.5)
            more = more[more != 1]  # a constant of ones (a missing scale) is no weight's
            pool = np.concatenate([drawn, more])
            _, first = np.unique(pool, return_index=True)
            drawn = pool[np.sort(first)]
        drawn = drawn[:total]
        return np.split(drawn, np.cumsum(sizes)[:-1]) if sizes else []

    def distinct_scalar(self, dtype) -> np.ndarray:
        """A one-element array, a value in [0.5, 1.5) not drawn before in `dtype` (half types
        hold few values there: past them, the range widens by octaves)."""
        drawn = self._drawn.setdefault(str(np.dtype(dtype)), set())
        for attempt in range(1 << 16):
            scale = np.float32(2.0 ** ((attempt // 64) % 16 - 8)) if attempt >= 64 else 1
            value = (self._rng.random(dtype=np.float32) + np.float32(0.5)) * scale
            cast = np.array([value]).astype(dtype)
            if float(cast[0]) != 1.0 and float(cast[0]) not in drawn:
                drawn.add(float(cast[0]))
                return cast
        raise ValueError(f"no distinct {dtype} stand-in value is left")


def is_float_dtype(dtype) -> bool:
    """True for the float dtypes of numpy, TensorFlow/Keras (by name) and torch."""
    name = str(dtype).rsplit(".", 1)[-1]
    return name.startswith(("float", "bfloat", "half", "double"))
