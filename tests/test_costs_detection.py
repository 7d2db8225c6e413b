"""Detection heads and sampling grids against hand-derived formulas."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from helpers import FLOAT, INT64, costed, typed_model

BILINEAR = 3 * (2 ** 2 - 1)  # three lerps of a + t·(b − a), as Resize counts linear 2-D


def totals(nodes, inputs, constants=None, opset=28):
    report = costed(typed_model(nodes, inputs, constants, opset=opset))
    return report.total.macs, report.total.flops


def test_roi_align_average():
    rois, c, out, s = 5, 4, 7, 2
    node = helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=out,
                            output_width=out, sampling_ratio=s)
    inputs = {"x": (FLOAT, [1, c, 32, 32]), "r": (FLOAT, [rois, 4]), "b": (INT64, [rois])}
    # s² bilinear samples per bin, then s² − 1 adds and a divide
    assert totals([node], inputs) == (0, rois * c * out * out * s * s * (BILINEAR + 1))


def test_max_roi_pool_bins_of_a_whole_map_roi():
    node = helper.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=[7, 7])
    inputs = {"x": (FLOAT, [1, 4, 28, 30]), "r": (FLOAT, [5, 5])}
    assert totals([node], inputs) == (0, 5 * 4 * 7 * 7 * (28 // 7) * -(-30 // 7))


@pytest.mark.parametrize("limit, kept", [(None, 0), (10, 10), (1000, 100)])
def test_non_max_suppression(limit, kept):
    batch, classes, boxes = 2, 3, 100
    names = ["b", "s"] + (["m"] if limit is not None else [])
    node = helper.make_node("NonMaxSuppression", names, ["y"])
    constants = {"m": np.array([limit])} if limit is not None else {}
    sort = boxes * 7  # ⌈log2 100⌉ comparisons per box
    iou = 13 * kept * boxes
    assert totals([node], {"b": (FLOAT, [batch, boxes, 4]), "s": (FLOAT, [batch, classes, boxes])},
                  constants) == (0, batch * classes * (sort + iou))


@pytest.mark.parametrize("opset, mode, taps", [(20, "linear", 2), (16, "bicubic", 4),
                                               (22, "nearest", 1)])
def test_grid_sample(opset, mode, taps):
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode)
    n, c, ho, wo = 2, 3, 4, 5
    unnormalize = 3 * n * ho * wo * 2
    interpolate = n * c * ho * wo * 3 * (taps ** 2 - 1)
    assert totals([node], {"x": (FLOAT, [n, c, 8, 8]), "g": (FLOAT, [n, ho, wo, 2])},
                  opset=opset) == (0, unnormalize + interpolate)


@pytest.mark.parametrize("size, points", [([2, 3, 4, 5], 4 * 5), ([2, 3, 4, 5, 6], 4 * 5 * 6)])
def test_affine_grid_is_theta_times_the_constant_base_grid(size, points):
    theta = [2, 2, 3] if len(size) == 4 else [2, 3, 4]
    node = helper.make_node("AffineGrid", ["t", "size"], ["y"])
    macs = 2 * 3 * 4 * points  # its body pads a 2-D theta to 3×4
    assert totals([node], {"t": (FLOAT, theta)}, {"size": np.array(size)}) == (macs, 2 * macs)


def test_deform_conv_with_mask_and_bias():
    n, c, h, m, k = 1, 4, 8, 6, 3
    out = h - k + 1
    node = helper.make_node("DeformConv", ["x", "w", "off", "b", "mask"], ["y"],
                            kernel_shape=[k, k])
    inputs = {"x": (FLOAT, [n, c, h, h]), "off": (FLOAT, [n, 2 * k * k, out, out]),
              "mask": (FLOAT, [n, k * k, out, out])}
    constants = {"w": np.ones((m, c, k, k), np.float32), "b": np.ones(m, np.float32)}
    macs = n * m * out * out * c * k * k
    samples = n * c * out * out * k * k
    flops = 2 * macs + n * 2 * k * k * out * out + samples * (BILINEAR + 1) + n * m * out * out
    assert totals([node], inputs, constants) == (macs, flops)


def test_col2im_accumulates_every_patch_element():
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"])
    assert totals([node], {"x": (FLOAT, [1, 2 * 4, 9])},
                  {"image": np.array([4, 4]), "block": np.array([2, 2])}) == (0, 2 * 4 * 9)


@pytest.mark.parametrize("op_type", ["MaxUnpool", "TensorScatter"])
def test_scatter_ops_are_free(op_type):
    if op_type == "MaxUnpool":
        node = helper.make_node(op_type, ["x", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
        inputs = {"x": (FLOAT, [1, 2, 4, 4]), "i": (INT64, [1, 2, 4, 4])}
    else:
        node = helper.make_node(op_type, ["x", "i"], ["y"])
        inputs = {"x": (FLOAT, [2, 4, 8, 16]), "i": (FLOAT, [2, 4, 1, 16])}
    assert totals([node], inputs) == (0, 0)
