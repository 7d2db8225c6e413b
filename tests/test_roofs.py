"""A roofline is a floor under the measured time: the LLM estimate moves no bytes for a view
onnxruntime aliases (a Reshape, an Identity: its output is its input's buffer). Counting them let
a Llama decode step (bench/llm_estimate_vs_measured.py, d=512, 4 layers, context 256) run
faster than its estimate: of its 107 MB of served traffic, 27 MB were Reshapes and Identities."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxflops.ops import ALIASES, VIEWS
from onnxflops.serving.hardware import Hardware
from onnxflops.serving.phases import Phase, Traffic

# 1 GFLOP/s and 1 GB/s: the times below are FLOPs and bytes over 10^9.
SLOW = Hardware("slow", {"fp32": 1e9}, 1e9, computes_in="fp32")


def _reshape_then_matmul(view: str):
    """x (batch × 64) → `view` → MatMul by a 64 × 32 float32 weight."""
    w = numpy_helper.from_array(np.ones((64, 32), np.float32), "w")
    shape = numpy_helper.from_array(np.array([-1, 64], np.int64), "shape")
    first = helper.make_node("Reshape", ["x", "shape"], ["v"], name="view") if view == "Reshape" \
        else helper.make_node(view, ["x"], ["v"], name="view")
    graph = helper.make_graph(
        [first, helper.make_node("MatMul", ["v", "w"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])], [w, shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("view", ["Reshape", "Identity"])
def test_a_view_onnxruntime_aliases_moves_no_bytes_in_the_roofline(view):
    from onnxflops.api import count_with_model

    counted = count_with_model(_reshape_then_matmul(view), symbolic=True, keep_bound=False)
    phase = Phase(counted, ("batch",), Traffic(weight_bits=32, activation_bits=32))
    # By hand, batch 4: the MatMul reads x (4·64·4 B) and w (64·32·4 B), writes y (4·32·4 B),
    # and does 2·4·64·32 FLOPs; the view moves nothing.
    matmul_bytes = 4 * 64 * 4 + 64 * 32 * 4 + 4 * 32 * 4
    timing = phase.seconds(SLOW, "fp32", batch=4)
    assert timing.seconds == pytest.approx(max(2 * 4 * 64 * 32, matmul_bytes) / 1e9)
    # The count itself still charges the view its read and write.
    assert phase.at(batch=4).bytes_read > 4 * 64 * 4 + 64 * 32 * 4


def test_only_views_that_alias_their_input_are_free():
    assert ALIASES == {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"}
    assert "Transpose" in VIEWS - ALIASES  # onnxruntime's Transpose writes a new buffer
