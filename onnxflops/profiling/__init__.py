"""Measure: latency and per-node times under onnxruntime, joined to the counted FLOPs."""

from onnxflops.profiling.profile import MeasuredNode, Profile, profile

__all__ = ["MeasuredNode", "Profile", "profile"]
