"""Comparing two models' counts layer by layer: the proof that a port is the same network."""

from onnxflops.comparison.compare import (
    Comparison,
    assert_same_cost,
    compare,
)

__all__ = ["Comparison", "assert_same_cost", "compare"]
