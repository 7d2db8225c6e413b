"""onnxflops: one trustworthy count of FLOPs, MACs, params and memory traffic for a neural network."""

from onnxflops.api import count
from onnxflops.costs.registry import CONVENTIONS
from onnxflops.errors import OnnxFlopsError
from onnxflops.report import NodeReport, Report, Totals

__all__ = ["CONVENTIONS", "NodeReport", "OnnxFlopsError", "Report", "Totals", "count"]
__version__ = "0.1.0"
