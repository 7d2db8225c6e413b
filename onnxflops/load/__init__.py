"""Stage 1, load: read an .onnx file (or copy a ModelProto) without reading weight bytes."""

from onnxflops.load.reader import load_model, without_weight_bytes
from onnxflops.load.validate import opset_warnings
from onnxflops.load.weight_roles import WeightRoles, record_weight_roles, weight_roles

__all__ = ["WeightRoles", "load_model", "opset_warnings", "record_weight_roles", "weight_roles",
           "without_weight_bytes"]
