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


def test_window_of_constant_size_is_constant_work():
    # HannWindow costs its function body, all of which depends on the constant size only.
    nodes = [helper.make_node("HannWindow", ["size"], ["w"]), helper.make_node("Mul", ["x", "w"],
                                                                              ["y"])]
    assert flops(nodes, {"x": (FLOAT, [10])}, {"size": np.array(10)}) == 10
