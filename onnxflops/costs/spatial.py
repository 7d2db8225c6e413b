"""Sampling grids, deformable convolution and patch folding.

Interpolation is counted as Resize counts it: each output value interpolates taps^d inputs with
taps^d − 1 lerps of 3 operations (taps = 2 linear, 4 cubic, nearest 0).
"""

from __future__ import annotations

import math

from onnxflops.costs.node import Node
from onnxflops.costs.registry import CONTRACTION, DATA_MOVEMENT, OTHER, ZERO, Cost, rule

_TAPS = {"linear": 2, "bilinear": 2, "cubic": 4, "bicubic": 4, "nearest": 1}
# Unnormalizing a grid coordinate from [-1, 1] to pixels: add 1, scale, subtract or halve.
UNNORMALIZE_FLOPS = 3


def interpolation_flops(mode: str, dims: int) -> int:
    return 3 * (_TAPS[mode] ** dims - 1)


@rule("GridSample", category=DATA_MOVEMENT)
def grid_sample(n: Node) -> Cost:
    """numel(grid)·3 + numel(Y)·3·(taps^d − 1): unnormalize coordinates, interpolate outputs"""
    grid = n.input(1)
    spatial = grid.dims[-1]
    mode = n.attr("mode", "linear" if n.opset >= 20 else "bilinear")
    return Cost(flops=grid.numel * UNNORMALIZE_FLOPS
                + n.output().numel * interpolation_flops(mode, spatial))


@rule("AffineGrid", category=CONTRACTION, weights=(0,))
def affine_grid(n: Node) -> Cost:
    """MACs = N·12·D·H·W (D = 1 in 2-D): its body's MatMul of a 3×4 theta with the base grid"""
    # The base grid depends only on `size`, so it is constant; theta × grid is the run-time work.
    grid = n.output().dims
    batch, points = grid[0], math.prod(grid[1:-1])
    return Cost(macs=batch * 3 * 4 * points, dot_products=batch * 3 * points)


@rule("DeformConv", category=CONTRACTION, weights=(1, 3))
def deform_conv(n: Node) -> Cost:
    """Conv's MACs; +numel(offset), (9 + mask)·N·C·prod(out)·prod(k) samples, +numel(Y) bias"""
    x, w, y = n.input(0).dims, n.input(1).dims, n.output()
    kernel = math.prod(w[2:])
    samples = x[0] * x[1] * math.prod(y.dims[2:]) * kernel
    per_sample = interpolation_flops("linear", len(w) - 2) + n.has_input(4)
    bias = y.numel if n.has_input(3) else 0
    return Cost(macs=y.numel * math.prod(w[1:]), dot_products=y.numel,
                flops=n.input(2).numel + samples * per_sample + bias)


@rule("Col2Im", category=DATA_MOVEMENT)
def col2im(n: Node) -> Cost:
    """numel(input) adds: each patch element is accumulated into the image"""
    x = n.input(0)
    return Cost(flops=x.numel) if x.is_float else Cost(int_ops=x.numel)


@rule("ImageDecoder", category=OTHER)
def image_decoder(n: Node) -> Cost:
    """0: decoding an image file is byte-level work outside the tensor arithmetic counted here"""
    return ZERO
