"""Which initializers of a converted graph hold which framework weights, found by their values.

TensorFlow freezes variables into constants whose names say nothing of the variable, and may fold
them (a position-embedding table cut to the rows a graph reads). Conversion runs with stand-in
weights, distinct random values per variable (see `converters.structure`): an initializer whose
values are among one variable's stand-ins holds that variable, whole or in part.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

_SAMPLES = 16  # values looked up per initializer
_AGREEMENT = 0.75  # share of the samples found in one variable for the initializer to be its


@dataclass(frozen=True)
class Weight:
    key: str  # the framework's name for it
    values: np.ndarray  # its stand-in values
    trainable: bool


def weight_roles_by_value(proto: onnx.ModelProto, weights: list[Weight]) -> dict:
    """The keyword arguments of `record_weight_roles` for `proto`: trainable weights are
    parameters, the others buffers; everything else (float initializers found in no weight,
    integer masks and indices, Constant nodes) is no weight."""
    parameters: dict[str, str] = {}
    buffers: dict[str, str] = {}
    constants: list[str] = []
    if weights:
        flat = np.concatenate([w.values.astype(np.float32).ravel() for w in weights])
        owners = np.repeat(np.arange(len(weights)), [w.values.size for w in weights])
        order = np.argsort(flat, kind="stable")
        ordered, ordered_owners = flat[order], owners[order]
    for initializer in proto.graph.initializer:
        if initializer.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE) \
                or initializer.data_location == onnx.TensorProto.EXTERNAL:
            continue
        values = numpy_helper.to_array(initializer).astype(np.float32).ravel()
        owner = _owner(values, ordered, ordered_owners) if weights and values.size else None
        if owner is None:
            constants.append(initializer.name)
        elif owner >= 0:
            weight = weights[owner]
            (parameters if weight.trainable else buffers)[initializer.name] = weight.key
        else:  # values of several weights (folded together): a parameter of its own
            parameters[initializer.name] = initializer.name
    return {"parameters": parameters, "buffers": buffers, "constants": constants,
            "sizes": {w.key: int(w.values.size) for w in weights}, "exhaustive": True}


def _owner(values: np.ndarray, ordered: np.ndarray, owners: np.ndarray) -> int | None:
    """The weight whose stand-ins hold `values`; None: no weight's; -1: several weights'.

    Distinct samples only: a table of cosines is mostly 1.0, a value a stand-in may have too."""
    samples = np.unique(values[np.linspace(0, values.size - 1,
                                           min(_SAMPLES, values.size)).astype(int)])
    at = np.minimum(np.searchsorted(ordered, samples), ordered.size - 1)
    found = ordered[at] == samples
    if found.sum() < _AGREEMENT * samples.size:
        return None
    candidates, counts = np.unique(owners[at[found]], return_counts=True)
    best = int(np.argmax(counts))
    return int(candidates[best]) if counts[best] >= _AGREEMENT * samples.size else -1
