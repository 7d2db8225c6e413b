"""Shapes inside a control-flow body that depend on values from the scope around it."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

import onnxflops
from helpers import model, node, weight


def test_loop_body_reads_unsqueeze_axes_from_the_outer_scope():
    trips, n = 3, 4
    # Each iteration: y = MatMul(Unsqueeze(x, axes), W) with axes an outer-scope constant.
    body = helper.make_graph(
        [node("Unsqueeze", ["x", "axes"], ["row"]),
         node("MatMul", ["row", "W"], ["prod"]),
         node("Squeeze", ["prod", "axes"], ["x_next"]),
         node("Identity", ["cond"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_next", TensorProto.FLOAT, None)])
    loop = node("Loop", ["M", "", "x0"], ["x_final"], body=body)
    weights = [weight("M", (), np.int64, trips), weight("axes", (1,), np.int64, [0]),
               weight("W", (n, n))]
    report = onnxflops.count(model([loop], {"x0": [n]}, weights, opset=17))
    assert not report.uncosted, report.uncosted
    assert report.total.macs == trips * n * n
    assert report.total.params == n * n
