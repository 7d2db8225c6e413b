"""Stage 5, canonicalize: rewrite the forms frameworks export differently into one form.

Counting then sees the same nodes whichever exporter wrote the model.
"""

from onnxflops.canonical.rewrites import canonicalize

__all__ = ["canonicalize"]
