"""Which initializers a framework called parameters and which buffers, as converters record it.

A converter knows exactly (torch `parameters()` vs `buffers()`, Keras trainable vs non-trainable
weights); the graph alone only suggests it. The record is a JSON entry of the model's
metadata_props:
- `parameters` / `buffers`: initializer name → the framework weight it holds, all of it or a part
  (an exporter may fold a table to the rows a graph reads, or split one weight in several);
- `sizes`: framework weight → its element count, counted once however many initializers hold it;
- `constants`: initializers that are neither (masks and tables the exporter folded);
- `exhaustive`: every weight is named, so a constant tensor the record does not name is no
  weight; otherwise such tensors are judged by the graph rules, as in plain ONNX files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import onnx

KEY = "onnxflops.weight_roles"
PARAMETER, BUFFER, CONSTANT = "parameter", "buffer", "constant"


@dataclass(frozen=True)
class WeightRoles:
    parameters: Mapping[str, str]
    buffers: Mapping[str, str]
    sizes: Mapping[str, int]
    constants: frozenset[str]
    exhaustive: bool

    def role(self, initializer: str) -> tuple[str, str] | None:
        """(PARAMETER or BUFFER, the framework weight) or (CONSTANT, the name); None: the graph
        rules decide."""
        if initializer in self.parameters:
            return PARAMETER, self.parameters[initializer]
        if initializer in self.buffers:
            return BUFFER, self.buffers[initializer]
        if initializer in self.constants or self.exhaustive:
            return CONSTANT, initializer
        return None


def record_weight_roles(model: onnx.ModelProto, parameters: Mapping[str, str] | Iterable[str],
                        buffers: Mapping[str, str] | Iterable[str], *,
                        sizes: Mapping[str, int] | None = None,
                        constants: Iterable[str] = (), exhaustive: bool = False) -> None:
    """Write the record into the model's metadata (replacing any). Names given as a plain list
    hold their framework weight whole, under their own name."""
    entry = json.dumps({"parameters": _by_name(parameters), "buffers": _by_name(buffers),
                        "sizes": dict(sizes or {}), "constants": sorted(constants),
                        "exhaustive": exhaustive})
    kept = [p for p in model.metadata_props if p.key != KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    model.metadata_props.add(key=KEY, value=entry)


def weight_roles(model: onnx.ModelProto) -> WeightRoles | None:
    """The recorded roles; None where there is no record or it is not one we wrote."""
    for prop in model.metadata_props:
        if prop.key == KEY:
            try:
                entry = json.loads(prop.value)
                roles = WeightRoles(
                    {str(k): str(v) for k, v in entry["parameters"].items()},
                    {str(k): str(v) for k, v in entry["buffers"].items()},
                    {str(k): int(v) for k, v in entry.get("sizes", {}).items()},
                    frozenset(map(str, entry.get("constants", ()))),
                    bool(entry.get("exhaustive", False)))
            except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
                return None
            # Metadata is the file's word, not ours: a record claiming sizes no weight has is
            # no record, and the graph rules count the weights.
            if any(not 0 <= size < 2**63 for size in roles.sizes.values()):
                return None
            return roles
    return None


def _by_name(names: Mapping[str, str] | Iterable[str]) -> dict[str, str]:
    return dict(names) if isinstance(names, Mapping) else {str(n): str(n) for n in names}
