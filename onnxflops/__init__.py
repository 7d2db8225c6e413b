"""onnxflops: one trustworthy count of FLOPs, MACs, params and memory traffic for a neural network.

Every public name loads on first use, so that importing a part of the package (the converters
import `onnxflops.errors`, say) loads neither the pipeline nor the cost table.
"""

import importlib

_PUBLIC = {
    "count": "onnxflops.api",
    "clear_caches": "onnxflops.caches",
    "CONVENTIONS": "onnxflops.costs.registry",
    "Cost": "onnxflops.costs", "register_rule": "onnxflops.costs",
    "register_torch_op": "onnxflops.converters.torch_ops",
    "OnnxFlopsError": "onnxflops.errors", "UncostedWarning": "onnxflops.errors",
    "NodeReport": "onnxflops.results", "Report": "onnxflops.results",
    "Totals": "onnxflops.results",
    "Comparison": "onnxflops.comparison", "assert_same_cost": "onnxflops.comparison",
    "compare": "onnxflops.comparison",
    "llm": "onnxflops.serving", "LlmReport": "onnxflops.serving",
    "Profile": "onnxflops.profiling.measure", "profile": "onnxflops.profiling.measure",
}

__all__ = sorted(_PUBLIC)
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'onnxflops' has no attribute '{name}'")
    value = globals()[name] = getattr(importlib.import_module(_PUBLIC[name]), name)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
