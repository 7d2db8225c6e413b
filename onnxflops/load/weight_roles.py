"""Which initializers a framework called parameters and which buffers, as converters record it.

A converter knows exactly (torch `parameters()` vs `buffers()`, Keras trainable vs non-trainable
weights); the graph alone only suggests it. The record is a JSON entry of the model's
metadata_props:
- `parameters` / `buffers`: initializer name → the framework weight it holds, all of it or a part
  (an exporter may fold a table to the rows a graph reads, or split one weight in several);
- `sizes`: framework weight → its element count, counted once however many initializers hold it;
- `constants`: initializers that are neither (masks and tables the exporter folded);
- `exhaustive`: every weight is named, so a constant tensor the record does not name is no
  weight; otherwise such tensors are judged by the graph rules, as in plain ONNX files;
- `unused`: parameter → element count, for the framework's parameters that no node reads (a mask
  token used only in pre-training, a head run only in training mode, a backbone's untied output
  embedding): the count reports them apart, so that params + unused params = the framework's
  parameters;
- `unread_buffers`: buffer → element count, for non-learned state the graph holds no copy of (a
  Keras Normalization's statistics, read from a snapshot folded into constants, and its count):
  buffers all the same, as the framework counts them.

The record is read as untrusted input: an element count that is negative or beyond any model
(`MAX_ELEMENTS`) is refused in one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import onnx

from onnxflops.errors import OnnxFlopsError

KEY = "onnxflops.weight_roles"
PARAMETER, BUFFER, CONSTANT = "parameter", "buffer", "constant"
# No model holds a weight of more elements (2^50, a petabyte of int8): a larger count is corrupt.
MAX_ELEMENTS = 2 ** 50


@dataclass(frozen=True)
class WeightRoles:
    parameters: Mapping[str, str]
    buffers: Mapping[str, str]
    sizes: Mapping[str, int]
    constants: frozenset[str]
    exhaustive: bool
    unused: Mapping[str, int] = field(default_factory=dict)
    unread_buffers: Mapping[str, int] = field(default_factory=dict)

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
                        constants: Iterable[str] = (), exhaustive: bool = False,
                        unused: Mapping[str, int] | None = None,
                        unread_buffers: Mapping[str, int] | None = None) -> None:
    """Write the record into the model's metadata (replacing any). Names given as a plain list
    hold their framework weight whole, under their own name."""
    entry = json.dumps({"parameters": _by_name(parameters), "buffers": _by_name(buffers),
                        "sizes": dict(sizes or {}), "constants": sorted(constants),
                        "exhaustive": exhaustive, "unused": dict(unused or {}),
                        "unread_buffers": dict(unread_buffers or {})})
    kept = [p for p in model.metadata_props if p.key != KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    model.metadata_props.add(key=KEY, value=entry)


def weight_roles(model: onnx.ModelProto) -> WeightRoles | None:
    """The recorded roles; None where there is no record or it is not one we wrote. An element
    count out of range is refused (OnnxFlopsError)."""
    for prop in model.metadata_props:
        if prop.key == KEY:
            try:
                entry = json.loads(prop.value)
                roles = WeightRoles(
                    {str(k): str(v) for k, v in entry["parameters"].items()},
                    {str(k): str(v) for k, v in entry["buffers"].items()},
                    {str(k): int(v) for k, v in entry.get("sizes", {}).items()},
                    frozenset(map(str, entry.get("constants", ()))),
                    bool(entry.get("exhaustive", False)),
                    _counts(entry.get("unused", {})), _counts(entry.get("unread_buffers", {})))
            except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
                return None
            _check_sizes(roles)
            return roles
    return None


def _counts(entry: Mapping) -> dict[str, int]:
    """Weight → element count, as the record gives it (checked by _check_sizes)."""
    return {str(k): int(v) for k, v in entry.items()}


def _check_sizes(roles: WeightRoles) -> None:
    for what, sizes in (("weight", roles.sizes), ("unused parameter", roles.unused),
                        ("unread buffer", roles.unread_buffers)):
        for name, count in sizes.items():
            if not 0 <= count <= MAX_ELEMENTS:
                shown = str(count) if abs(count) < 10 ** 30 else f"{'-' if count < 0 else ''}>10^30"
                raise OnnxFlopsError(f"metadata '{KEY}': {what} '{name[:200]}' has {shown} "
                                     f"elements, which no model holds (0 to 2^50)")


def _by_name(names: Mapping[str, str] | Iterable[str]) -> dict[str, str]:
    return dict(names) if isinstance(names, Mapping) else {str(n): str(n) for n in names}
