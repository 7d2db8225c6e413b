"""Stage 3: bring the bound model to the form the counter expects.

Model-local functions are inlined so that their nodes are costed like any other.
"""

from __future__ import annotations

import onnx
import onnx.inliner


def normalize(model: onnx.ModelProto) -> onnx.ModelProto:
    if model.functions:
        model = onnx.inliner.inline_local_functions(model)
    return model
