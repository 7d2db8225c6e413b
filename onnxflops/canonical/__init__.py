"""Stage 5, canonicalize: rewrite the forms frameworks export differently into one form.

Counting then sees the same nodes whichever exporter wrote the model. rules.py lists the rules and
applies them; editor.py is the graph editor they work through; structural.py and probes.py hold
the rules, by how they recognise a form.
"""

from onnxflops.canonical.rules import canonicalize

__all__ = ["canonicalize"]
