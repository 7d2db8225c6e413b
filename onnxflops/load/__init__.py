"""Stage 1, load: read an .onnx file (or copy a ModelProto) without reading weight bytes."""

from onnxflops.load.reader import load_model, without_weight_bytes
from onnxflops.load.validate import opset_warnings

__all__ = ["load_model", "opset_warnings", "without_weight_bytes"]
