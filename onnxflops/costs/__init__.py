"""The op-cost table. Importing this package registers every rule in REGISTRY."""

from onnxflops.costs import (  # noqa: F401  (imported for their registrations)
    activation,
    contraction,
    control_flow,
    data_movement,
    elementwise,
    functions,
    normalization,
    pooling,
    recurrent,
    reduction,
)
from onnxflops.costs.registry import CONVENTIONS, REGISTRY, Cost, Rule

__all__ = ["CONVENTIONS", "REGISTRY", "Cost", "Rule"]
