"""Spectral ops: a length-N transform costs 5·N·⌈log2 N⌉ FLOPs (radix-2 FFT)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from helpers import FLOAT, costed, typed_model


def fft(n: int) -> int:
    return 5 * n * int(np.ceil(np.log2(n)))


def flops(nodes, inputs, constants=None, opset=28):
    report = costed(typed_model(nodes, inputs, constants, opset=opset))
    assert report.total.macs == 0
    return report.total.flops


@pytest.mark.parametrize("opset, shape, constants, inputs, transforms, length", [
    # DFT-20: the axis is an input, -2 by default (the last signal dim)
    (20, [2, 16, 8, 1], {}, ["x"], 2 * 16, 8),
    (20, [2, 16, 8, 2], {"n": np.array(32), "axis": np.array(1)}, ["x", "n", "axis"], 2 * 8, 32),
    # DFT-17: the axis is an attribute, 1 by default
    (17, [2, 16, 1], {}, ["x"], 2, 16),
    (17, [3, 12, 2], {}, ["x"], 3, 12),  # not a power of two: ⌈log2 12⌉ = 4 stages
])
def test_dft(opset, shape, constants, inputs, transforms, length):
    node = helper.make_node("DFT", inputs, ["y"])
    assert flops([node], {"x": (FLOAT, shape)}, constants, opset) == transforms * fft(length)


def test_stft_with_window():
    batch, length, step, frame = 2, 64, 8, 16
    nodes = [helper.make_node("STFT", ["x", "step", "w"], ["y"])]
    frames = (length - frame) // step + 1
    assert flops(nodes, {"x": (FLOAT, [batch, length, 1]), "w": (FLOAT, [frame])},
                 {"step": np.array(step)}) == batch * frames * (fft(frame) + frame)


def test_a_window_of_constant_size_is_foldable_work():
    # A window a forward makes from a literal size (torch.hann_window(10) in the forward) is float
    # work on a table of literals: counted, and foldable. HannWindow costs its function body: a
    # float Range of N = 10 (N + 1 adds, and Sub, Div, Ceil for its count), then per element
    # θ and 2θ (2 Mul), two Cos, two Mul by the coefficients, a Sub and an Add: 8; the
    # arithmetic on the size alone (a scalar: the angular step) stays free.
    nodes = [helper.make_node("HannWindow", ["size"], ["w"]), helper.make_node("Mul", ["x", "w"],
                                                                              ["y"])]
    report = costed(typed_model(nodes, {"x": (FLOAT, [10])}, {"size": np.array(10)}))
    window = (10 + 1 + 3) + 8 * 10
    assert (report.foldable.flops, report.foldable_nodes) == (window, 1) == (94, 1)
    assert report.total.flops == window + 10

