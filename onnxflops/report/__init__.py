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

__all__ = ["BACKWARD", "SUMMED", "NodeReport", "Report", "Totals", "Uncosted", "human"]
