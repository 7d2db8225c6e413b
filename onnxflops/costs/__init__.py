"""The op-cost table. Importing this package registers every rule in REGISTRY."""

from onnxflops.costs import (  # noqa: F401  (imported for their registrations)
    activation,
    contraction,
    contrib,
    control_flow,
    data_movement,
    detection,
    elementwise,
    functions,
    linalg,
    ml,
    normalization,
    pooling,
    quantization,
    recurrent,
    reduction,
    sampling,
    selection,
    signal,
    spatial,
    text,
)
from onnxflops.costs.registry import CONVENTIONS, REGISTRY, Cost, Rule

__all__ = ["CONVENTIONS", "REGISTRY", "Cost", "Rule"]
