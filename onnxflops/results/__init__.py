"""What a count returns: totals, one record per node, sums by op type, layer or category; its
formats are written by onnxflops.formats."""

from onnxflops.results.tables import (
    BACKWARD,
    SUMMED,
    NodeReport,
    Report,
    Totals,
    Uncosted,
    human,
    summary,
)
from onnxflops.results.layers import framework_names, layer_in_model, modules_at_depth
from onnxflops.formats import markdown_table, text_table

__all__ = ["BACKWARD", "SUMMED", "NodeReport", "Report", "Totals", "Uncosted", "human",
           "framework_names", "layer_in_model", "markdown_table", "modules_at_depth", "summary",
           "text_table"]
