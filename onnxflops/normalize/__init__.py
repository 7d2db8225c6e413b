"""Stage 3, normalize: bring the bound model to the form analysis expects (local functions inlined)."""

from onnxflops.normalize.functions import normalize

__all__ = ["normalize"]
