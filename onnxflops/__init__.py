"""onnxflops: one trustworthy count of FLOPs, MACs, params and memory traffic for a neural network."""

from onnxflops.api import count
from onnxflops.compare import Comparison, assert_same_cost, compare
from onnxflops.costs.registry import CONVENTIONS
from onnxflops.errors import OnnxFlopsError
from onnxflops.profiling import Profile, profile
from onnxflops.report import NodeReport, Report, Totals

__all__ = ["CONVENTIONS", "Comparison", "NodeReport", "OnnxFlopsError", "Profile", "Report",
           "Totals", "assert_same_cost", "compare", "count", "profile"]
__version__ = "0.1.0"
