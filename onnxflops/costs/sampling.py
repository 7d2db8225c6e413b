"""Random number generation. A generator draws standard values (normal with mean 0 and scale 1,
uniform on [0, 1)); the generator's own integer work is not counted, only the FLOPs that move a draw
to the requested distribution, as Gemm counts alpha and beta only when they are not 1.
"""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import RANDOM, Cost, rule
from onnxflops.costs.selection import log2_ceil


@rule(["RandomNormal", "RandomNormalLike"], category=RANDOM)
def random_normal(n: Node) -> Cost:
    """numel(Y) per draw transformation: ·scale when scale ≠ 1, +mean when mean ≠ 0"""
    ops = (n.attr("scale", 1.0) != 1.0) + (n.attr("mean", 0.0) != 0.0)
    return Cost(flops=ops * n.output().numel)


@rule(["RandomUniform", "RandomUniformLike"], category=RANDOM)
def random_uniform(n: Node) -> Cost:
    """numel(Y) per draw transformation: ·(high − low) when it is not 1, +low when low ≠ 0"""
    low, high = n.attr("low", 0.0), n.attr("high", 1.0)
    ops = (high - low != 1.0) + (low != 0.0)
    return Cost(flops=ops * n.output().numel)


@rule("Multinomial", category=RANDOM)
def multinomial(n: Node) -> Cost:
    """N·(2·C + S·⌈log2 C⌉): exp and running sum per class, a binary search per sample"""
    batch, classes = n.input(0).dims
    samples = n.attr("sample_size", 1)
    return Cost(flops=batch * (2 * classes + samples * log2_ceil(classes)))
