"""Stage 3: bring the bound model to the form the counter expects.

Model-local functions are inlined so that their nodes are costed like any other.
"""

from __future__ import annotations

import onnx
import onnx.inliner

from onnxflops.errors import OnnxFlopsError, first_line


def normalize(model: onnx.ModelProto) -> onnx.ModelProto:
    if model.functions:
        try:
            model = onnx.inliner.inline_local_functions(model)
        except Exception as e:  # noqa: BLE001 - the inliner's checks raise several kinds
            raise OnnxFlopsError(f"the model's local functions cannot be inlined: {first_line(e)}") \
                from None
    return model
