"""onnxflops: one trustworthy count of FLOPs, MACs, params and memory traffic for a neural network."""

import importlib

from onnxflops.api import count
from onnxflops.costs.registry import CONVENTIONS
from onnxflops.errors import OnnxFlopsError
from onnxflops.report.tables import NodeReport, Report, Totals

# Loaded on first use: counting, and so every start of the command line, needs neither.
_LAZY = {"Comparison": "onnxflops.comparison.compare", "assert_same_cost": "onnxflops.comparison.compare",
         "compare": "onnxflops.comparison.compare", "Profile": "onnxflops.profiling.measure",
         "profile": "onnxflops.profiling.measure"}

__all__ = ["CONVENTIONS", "Comparison", "NodeReport", "OnnxFlopsError", "Profile", "Report",
           "Totals", "assert_same_cost", "compare", "count", "profile"]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'onnxflops' has no attribute '{name}'")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
