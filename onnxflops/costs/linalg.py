"""Matrix decompositions."""

from __future__ import annotations

import math

from onnxflops.costs.node import Node
from onnxflops.costs.registry import OTHER, Cost, rule


@rule("Det", category=OTHER)
def det(n: Node) -> Cost:
    """per M×M matrix: M(M − 1) + (M − 1)M(2M − 1)/3 (pivoted LU) + M − 1 (diagonal product)"""
    # Step k: M − k pivot comparisons, M − k divisions, (M − k)² multiply-subtracts (2 each).
    x = n.input(0).dims
    m = x[-1]
    per_matrix = m * (m - 1) + (m - 1) * m * (2 * m - 1) // 3 + (m - 1)
    return Cost(flops=math.prod(x[:-2]) * per_matrix)
