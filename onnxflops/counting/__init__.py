"""Stage 6, count: cost every node with the one cost table and total the report."""

from onnxflops.counting.counter import count_model

__all__ = ["count_model"]
