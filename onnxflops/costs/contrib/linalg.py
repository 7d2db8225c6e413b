"""Linear algebra and complex arithmetic: matrix inverse, complex multiplication.
"""

from __future__ import annotations

import math

from onnxflops.costs.contrib.common import ms_rule
from onnxflops.costs.node import Node
from onnxflops.costs.registry import ELEMENTWISE, OTHER, Cost


@ms_rule("Inverse", category=OTHER)
def inverse(n: Node) -> Cost:
    """2·M³ per M×M matrix: Gauss-Jordan elimination (LU, then M triangular solves)"""
    x = n.input(0).dims
    m = x[-1]
    return Cost(flops=math.prod(x[:-2]) * 2 * m * m * m)


@ms_rule(["ComplexMul", "ComplexMulConj"], category=ELEMENTWISE)
def complex_mul(n: Node) -> Cost:
    """3·numel(Y): per complex value (2 floats) 4 multiplies and 2 adds"""
    return Cost(flops=3 * n.output().numel)
