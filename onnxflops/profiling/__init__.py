"""Measure: latency and per-node times under onnxruntime, joined to the counted FLOPs."""

import importlib

__all__ = ["MeasuredNode", "Profile", "profile"]

# A user's choices, as onnxruntime names them; here so that the command line reads them cheaply.
PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
OPT_LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC",
              "extended": "ORT_ENABLE_EXTENDED", "layout": "ORT_ENABLE_LAYOUT",
              "all": "ORT_ENABLE_ALL"}
# The stages `profile` reports its progress through, in order (its `progress` callback's names).
STAGES = ("counting", "timing", "profiling", "ceilings", "done")


def __getattr__(name: str):
    # The measuring module is loaded on first use: the command line imports this package at start.
    if name not in __all__:
        raise AttributeError(f"module 'onnxflops.profiling' has no attribute '{name}'")
    value = globals()[name] = getattr(importlib.import_module("onnxflops.profiling.measure"), name)
    return value
