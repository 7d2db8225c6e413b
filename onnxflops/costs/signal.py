"""Spectral ops. A transform of length N costs what a radix-2 FFT of a complex signal costs:
5·N·⌈log2 N⌉ FLOPs (N/2·log2 N butterflies of one complex multiply and two complex adds),
the figure FFT benchmarks quote. Real and one-sided transforms are counted as complex ones.
The window functions (HannWindow, ...) cost their function bodies (functions.py).
"""

from __future__ import annotations

import math

from onnxflops.costs.node import Node
from onnxflops.costs.registry import SIGNAL, Cost, rule

FFT_FLOPS_PER_POINT_AND_STAGE = 5


def fft_flops(length) -> int:
    """5·N·⌈log2 N⌉ for one transform of length N."""
    return FFT_FLOPS_PER_POINT_AND_STAGE * length * (length - 1).bit_length()


@rule("DFT", category=SIGNAL)
def dft(n: Node) -> Cost:
    """transforms·5·N·⌈log2 N⌉: one FFT of length N (dft_length) per signal along the axis"""
    x = n.input(0)
    # DFT-20 moved `axis` to an input and changed its default from 1 to -2.
    axis = n.attr_or_input("axis", 2, -2 if n.opset >= 20 else 1)
    axis = int(axis) % x.rank
    length = n.attr_or_input("dft_length", 1, x.dims[axis])
    transforms = math.prod(d for i, d in enumerate(x.dims[:-1]) if i != axis)
    return Cost(flops=transforms * fft_flops(int(length)))


@rule("STFT", category=SIGNAL)
def stft(n: Node) -> Cost:
    """batch·frames·(5·L·⌈log2 L⌉ + L): an FFT per frame of length L, +L multiplies by a window"""
    batch, frames = n.output().dims[:2]
    window = n.input(2).dims[0] if n.has_input(2) else None
    length = int(n.attr_or_input("frame_length", 3, window))
    windowing = length if window is not None else 0
    return Cost(flops=batch * frames * (fft_flops(length) + windowing))


@rule("MelWeightMatrix", category=SIGNAL)
def mel_weight_matrix(n: Node) -> Cost:
    """2·numel(Y): one triangle slope (a subtraction and a division) per weight"""
    return Cost(flops=2 * n.output().numel)
