"""What a count returns: totals, one record per node, tables by op type or layer, JSON and CSV."""

from onnxflops.report.tables import (
    BACKWARD,
    SUMMED,
    NodeReport,
    Report,
    Totals,
    Uncosted,
    human,
)
from onnxflops.report.layers import layer_in_model
from onnxflops.report.render import markdown_table, text_table

__all__ = ["BACKWARD", "SUMMED", "NodeReport", "Report", "Totals", "Uncosted", "human",
           "layer_in_model", "markdown_table", "text_table"]
