"""onnxflops: one trustworthy count of FLOPs, MACs, params and memory traffic for a neural network.

Every public name loads on first use, so that importing a part of the package (the converters
import `onnxflops.errors`, say) loads neither the pipeline nor the cost table.
"""

import importlib
import sys
from typing import Callable

_PUBLIC = {
    "count": "onnxflops.api", "SequenceShape": "onnxflops.bind",
    "clear_caches": "onnxflops.caches",
    "CONVENTIONS": "onnxflops.costs.registry",
    "Cost": "onnxflops.costs", "register_rule": "onnxflops.costs",
    "register_torch_op": "onnxflops.converters.torch_ops",
    "OnnxFlopsError": "onnxflops.errors", "UncostedWarning": "onnxflops.errors",
    "DataPathWarning": "onnxflops.errors",
    "NodeReport": "onnxflops.results", "Report": "onnxflops.results",
    "Totals": "onnxflops.results",
    "Comparison": "onnxflops.comparison", "assert_same_cost": "onnxflops.comparison",
    "compare": "onnxflops.comparison",
    "llm": "onnxflops.serving", "LlmReport": "onnxflops.serving",
    "Profile": "onnxflops.profiling.measure", "profile": "onnxflops.profiling.measure",
}

__all__ = sorted(_PUBLIC)
__version__ = "0.2.0"


def loaded_on_first_use(package: str, public: dict[str, str]) -> tuple[Callable, Callable]:
    """A package's `__getattr__` and `__dir__` for names, each loaded from its module (`public`:
    name → module) on first use and kept."""
    namespace = sys.modules[package].__dict__

    def getattr_(name: str):
        if name not in public:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        value = namespace[name] = getattr(importlib.import_module(public[name]), name)
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(public))

    return getattr_, dir_


__getattr__, __dir__ = loaded_on_first_use(__name__, _PUBLIC)
