"""Conversions of the reference pairs, each done once per test session (TF and exports are slow)."""

from __future__ import annotations

import functools
import os
import resource
import subprocess
import sys
from pathlib import Path

import onnx

import onnxflops
from onnxflops.models import pair

ROOT = Path(__file__).resolve().parents[2]
SIDES = ("keras", "dynamo", "legacy")


@functools.cache
def converted(name: str, side: str) -> onnx.ModelProto:
    """The pair's Keras model (side "keras") or PyTorch twin (side = the exporter) as ONNX."""
    from onnxflops.converters import keras_to_onnx, torch_to_onnx

    p = pair(name)
    if side == "keras":
        return keras_to_onnx(p.keras_model())
    return torch_to_onnx(p.torch_module(), p.torch_example(), exporter=side)


@functools.cache
def counted(name: str, side: str) -> onnxflops.Report:
    return onnxflops.count(converted(name, side))


# A framework conversion (TensorFlow above all) may take gigabytes: run it in a child held to this.
CONVERSION_MEMORY_BYTES = 6_000_000_000


def run_capped(argv: list[str], memory_bytes: int = CONVERSION_MEMORY_BYTES,
               timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    """Run `argv` (`python` meaning this interpreter) with its address space capped, text output
    captured, and this checkout first on its PYTHONPATH."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    if argv and argv[0] == "python":
        argv = [sys.executable, *argv[1:]]
    env = {**os.environ, **kwargs.pop("env", {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(argv, preexec_fn=cap, capture_output=True, text=True, timeout=timeout,
                          env=env, **kwargs)
