"""Which initializers of a converted graph hold which framework weights, found by their values.

TensorFlow freezes variables into constants whose names say nothing of the variable, and may fold
them (a position-embedding table cut to the rows a graph reads). Conversion runs with stand-in
weights, values of each variable's own (see `onnxflops.converters.structure`): one value filling
it, whose initializers are headers noting it (`onnxflops.converters.filled`), or distinct random
values. An initializer whose values are among one variable's stand-ins holds that variable, whole
or in part. An exporter folds weight-only arithmetic into new constants (Gemma's RMSNorm scale
read as 1 + scale): a constant of a small weight's size whose values rise or fall in the order of
that weight's distinct random stand-ins is an elementwise monotonic function of it, and holds it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from onnxflops.converters.filled import fill_value

_SAMPLES = 16  # values looked up per initializer
_AGREEMENT = 0.75  # share of the samples found in one variable for the initializer to be its
# Stand-in values kept for lookups at most: 12 bytes each. Past it, large weights keep only the
# values whose bits end in k zeros, and initializers look up theirs: chosen by content, the same
# values are kept on both sides, whatever part of a weight an initializer holds.
_KEPT = 20_000_000
SMALL_WEIGHT = 4096  # weights this small are kept whole
# Elements an initializer needs for its order to tell which weight a function of it holds: the
# chance that a random order of this many matches another is below 1 in 10^4.
MONOTONE_MIN = 8
# Share of an initializer's values that must be distinct for its order to be read.
_DISTINCT = 0.9


@dataclass(frozen=True)
class Weight:
    key: str  # the framework's name for it
    values: np.ndarray  # its stand-in values: all of them, or the one that fills it
    trainable: bool
    size: int | None = None  # its elements, where `values` is its fill value only

    @property
    def elements(self) -> int:
        return self.values.size if self.size is None else self.size


def weight_roles_by_value(proto: onnx.ModelProto, weights: list[Weight], *,
                          distinct: bool = True) -> dict:
    """The keyword arguments of `record_weight_roles` for `proto`: trainable weights are
    parameters, the others buffers; everything else (float initializers found in no weight,
    integer masks and indices, Constant nodes) is no weight.

    `distinct`: each weight's values are its own (stand-ins). Real weights share values (fresh
    zero biases, unit scales): an initializer that several weights could hold is a parameter or
    a buffer of its own where those weights are all trainable or all not, and is left to the
    graph's rules where they differ (the record is then not exhaustive)."""
    parameters: dict[str, str] = {}
    buffers: dict[str, str] = {}
    constants: list[str] = []
    undecided = False
    total = sum(w.values.size for w in weights)
    mask = (1 << max(0, int(np.ceil(np.log2(total / _KEPT))))) - 1 if total > _KEPT else 0
    if weights:
        kept = [_kept(w.values, mask if w.values.size > SMALL_WEIGHT else 0) for w in weights]
        flat = np.concatenate(kept)
        owners = np.repeat(np.arange(len(weights), dtype=np.int32), [k.size for k in kept])
        order = np.argsort(flat, kind="stable")
        ordered, ordered_owners = flat[order], owners[order]
        del flat, owners, order
    by_size: dict[int, list[int]] = {}  # weights whose stand-ins are distinct random values
    for position, weight in enumerate(weights):
        if weight.size is None and weight.values.size >= MONOTONE_MIN:
            by_size.setdefault(weight.values.size, []).append(position)
    for initializer in proto.graph.initializer:
        if initializer.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
            continue
        values = fill_value(initializer)  # a header of a filled stand-in: its one value
        if values is None:
            if initializer.data_location == onnx.TensorProto.EXTERNAL:
                continue
            values = numpy_helper.to_array(initializer)
        values = values.astype(np.float32).ravel()
        found = _owners(values, ordered, ordered_owners, mask, distinct) \
            if weights and values.size else None
        if found and len(found) > 1:  # no weight holds more values than it has
            found = [i for i in found if weights[i].elements >= values.size] or found
        if found is None and distinct:
            found = _monotone_owner(values, weights, by_size)
        if found is None:
            constants.append(initializer.name)
        elif len(found) == 1:
            weight = weights[found[0]]
            (parameters if weight.trainable else buffers)[initializer.name] = weight.key
        elif not found:  # values of several weights (folded together): a parameter of its own
            parameters[initializer.name] = initializer.name
        elif len({weights[i].trainable for i in found}) == 1:  # equal values of several weights
            trainable = weights[found[0]].trainable
            (parameters if trainable else buffers)[initializer.name] = initializer.name
        else:
            undecided = True
    return {"parameters": parameters, "buffers": buffers, "constants": constants,
            "sizes": {w.key: int(w.elements) for w in weights}, "exhaustive": not undecided}


def _kept(values: np.ndarray, mask: int) -> np.ndarray:
    flat = values.astype(np.float32).ravel()
    return flat if not mask else flat[(flat.view(np.uint32) & mask) == 0]


def _owners(values: np.ndarray, ordered: np.ndarray, owners: np.ndarray, mask: int = 0,
            distinct: bool = True) -> list[int] | None:
    """The weights that may hold `values`: one, or (real values) all that hold every sample;
    [] where the values are several weights' (folded together); None: no weight's.

    Distinct samples only: a table of cosines is mostly 1.0, a value a stand-in may have too.
    With a mask, also the values every weight keeps whatever its size."""
    picked = np.linspace(0, values.size - 1, min(_SAMPLES, values.size)).astype(int)
    samples = values[picked]
    if mask:
        kept = _kept(values, mask)
        samples = np.concatenate([samples, kept[np.linspace(0, kept.size - 1, min(
            _SAMPLES, kept.size)).astype(int)]]) if kept.size else samples
    samples = np.unique(samples)
    at = np.minimum(np.searchsorted(ordered, samples), ordered.size - 1)
    found = ordered[at] == samples
    # What a weight would have kept: all of a small one's values, a large one's masked ones.
    findable = int((found | ((samples.view(np.uint32) & mask) == 0)).sum())
    if not findable or found.sum() < _AGREEMENT * findable:
        return None
    if not distinct and found.all():
        ends = np.searchsorted(ordered, samples, side="right")
        holders = set(np.unique(owners[at[0]:ends[0]]).tolist())
        for start, end in zip(at[1:], ends[1:]):
            holders &= set(np.unique(owners[start:end]).tolist())
        if holders:
            return sorted(holders)
    candidates, counts = np.unique(owners[at[found]], return_counts=True)
    best = int(np.argmax(counts))
    return [int(candidates[best])] if counts[best] >= _AGREEMENT * findable else []


def _monotone_owner(values: np.ndarray, weights: list[Weight],
                    by_size: dict[int, list[int]]) -> list[int] | None:
    """[the weight] whose random stand-ins `values` follow in order, rising or falling (a folded
    elementwise monotonic function of it: 1 + w, exp(w), c·w); None where none does."""
    if values.size not in by_size or np.unique(values).size < _DISTINCT * values.size:
        return None
    for position in by_size[values.size]:
        steps = np.diff(values[np.argsort(weights[position].values, kind="stable")])
        if (steps >= 0).all() or (steps <= 0).all():
            return [position]
    return None
