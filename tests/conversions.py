"""Conversions of the reference pairs, each done once per test session (TF and exports are slow)."""

from __future__ import annotations

import functools

import onnx

import onnxflops
from models import pair

SIDES = ("keras", "dynamo", "legacy")


@functools.cache
def converted(name: str, side: str) -> onnx.ModelProto:
    """The pair's Keras model (side "keras") or PyTorch twin (side = the exporter) as ONNX."""
    from converters import keras_to_onnx, torch_to_onnx

    p = pair(name)
    if side == "keras":
        return keras_to_onnx(p.keras_model())
    return torch_to_onnx(p.torch_module(), p.torch_example(), exporter=side)


@functools.cache
def counted(name: str, side: str) -> onnxflops.Report:
    return onnxflops.count(converted(name, side))
