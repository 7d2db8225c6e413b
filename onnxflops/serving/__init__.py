"""Serving costs of a causal language model: prefill, decode with the KV cache, mixture-of-experts
params, and a roofline estimate on named hardware, all from the model's own graphs.

The stage's entry point; it sits above api and profiling (the local CPU's ceilings), below the
commands.
"""

from onnxflops.serving.cache import KvForm, KvLayer, kv_forms
from onnxflops.serving.hardware import HARDWARE, Hardware, hardware
from onnxflops.serving.phases import PhaseCost
from onnxflops.serving.serve import Estimate, LlmReport, Params, llm

__all__ = ["HARDWARE", "Estimate", "Hardware", "KvForm", "KvLayer", "LlmReport", "Params",
           "PhaseCost", "hardware", "kv_forms", "llm"]
