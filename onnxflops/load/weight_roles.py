"""Which initializers a framework called parameters and which buffers, as converters record it.

A converter knows exactly (torch `parameters()` vs `buffers()`); the graph alone only suggests it.
The record is a JSON entry of the model's metadata_props; plain ONNX files have none and are
counted by the graph rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import onnx

KEY = "onnxflops.weight_roles"


@dataclass(frozen=True)
class WeightRoles:
    parameters: frozenset[str]
    buffers: frozenset[str]


def record_weight_roles(model: onnx.ModelProto, parameters, buffers) -> None:
    """Write the names of the model's parameters and buffers into its metadata (replacing any)."""
    entry = json.dumps({"parameters": sorted(parameters), "buffers": sorted(buffers)})
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
                return WeightRoles(frozenset(map(str, entry["parameters"])),
                                   frozenset(map(str, entry["buffers"])))
            except (ValueError, KeyError, TypeError):
                return None
    return None
