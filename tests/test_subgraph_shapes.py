"""Shapes inside a control-flow body that depend on values from the scope around it."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import GraphProto, TensorProto, helper

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


def _loop_body(nodes: list, carried: str, outputs: list[str]) -> GraphProto:
    """A Loop body of `nodes` taking the trip index, the condition and one carried value, none of
    them typed beyond what the Loop gives; `outputs` untyped too."""
    return helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_value_info(carried, helper.TypeProto())],
        [helper.make_value_info(name, helper.TypeProto()) for name in outputs])


def _loop_over_relu(condition: str = "", passes_condition_on: bool = True, trips: int = 3):
    """A Loop of `trips` trips (3) whose body is a Relu of the carried [2, 4] state, the state also emitted
    as a scan output each trip; a Relu reads the stacked scan output."""
    body = _loop_body(
        [node("Relu", ["v"], ["v_next"]),
         node("Identity", ["cond"] if passes_condition_on else ["v"], ["cond_out"])
         if passes_condition_on else node("ReduceMax", ["v"], ["m"]),
         *([] if passes_condition_on else [node("Greater", ["m", "zero"], ["cond_out"])]),
         node("Identity", ["v_next"], ["emitted"])],
        "v", ["cond_out", "v_next", "emitted"])
    loop = node("Loop", ["trips", condition, "x"], ["y", "stacked"], body=body)
    weights = [weight("trips", (), np.int64, trips), weight("go", (), np.bool_, True),
               weight("zero", (), np.float32, 0.0)]
    return model([loop, node("Relu", ["stacked"], ["z"])], {"x": [2, 4]}, weights,
                 outputs=["y", "z"], opset=17)


def test_a_loops_outputs_carry_shapes_from_its_body_and_trip_count():
    report = onnxflops.count(_loop_over_relu())
    assert not report.uncosted, report.uncosted
    loop, relu = report.nodes
    # The carried state keeps the body's [2, 4]; the scan output stacks 3 trips of it.
    assert loop.output_shapes == [[2, 4], [3, 2, 4]]
    # Written: 2·4·4 B = 32 B carried + 3·2·4·4 B = 96 B stacked = 128 B.
    assert loop.bytes_written == 128
    # The Relu after it reads the 96 B stacking and costs 3·2·4 = 24 FLOPs (the Loop's body the
    # same: 3 trips of a Relu of 8 elements).
    assert (relu.bytes_read, relu.bytes_written, relu.flops) == (96, 96, 24)
    assert loop.flops == 24


def test_a_loop_whose_condition_starts_true_and_is_passed_on_runs_its_trip_count():
    loop = onnxflops.count(_loop_over_relu("go")).nodes[0]
    assert loop.output_shapes == [[2, 4], [3, 2, 4]]


def test_a_loop_whose_body_may_stop_it_early_stacks_an_unknown_number_of_trips():
    # The body computes its condition: the trip count is only a bound, so the stacked output's
    # first dim stays unknown and the Relu reading it is uncosted, never costed for 3 trips.
    report = onnxflops.count(_loop_over_relu("go", passes_condition_on=False))
    assert report.nodes[0].output_shapes[1][1:] == [2, 4]
    assert report.nodes[0].output_shapes[1][0] is None
    assert [u.op_type for u in report.uncosted] == ["Relu"]


@pytest.mark.parametrize("trips", [1, 0])
def test_a_loop_of_at_most_one_trip_runs_it_whatever_its_body_computes_as_condition(trips):
    # M = 1 with a condition that starts true: the one trip runs, and M stops the loop before
    # the body's condition is read (TensorFlow's map over a batch of one, D-FINE's top-k
    # gather); M = 0 runs none. The stacked output is M trips of [2, 4]; the Relu reading it
    # costs M·2·4 FLOPs.
    report = onnxflops.count(_loop_over_relu("go", passes_condition_on=False, trips=trips))
    assert not report.uncosted, report.uncosted
    loop, relu = report.nodes
    assert loop.output_shapes == [[2, 4], [trips, 2, 4]]
    assert relu.flops == trips * 2 * 4


def test_a_scans_stacked_outputs_have_the_scanned_length():
    body = helper.make_graph(
        [node("Add", ["state", "row"], ["next"]), node("Identity", ["next"], ["out"])], "body",
        [helper.make_value_info("state", helper.TypeProto()),
         helper.make_value_info("row", helper.TypeProto())],
        [helper.make_value_info("next", helper.TypeProto()),
         helper.make_value_info("out", helper.TypeProto())])
    scan = node("Scan", ["init", "rows"], ["final", "stacked"], body=body, num_scan_inputs=1)
    report = onnxflops.count(model([scan, node("Relu", ["stacked"], ["z"])],
                                   {"init": [16], "rows": [5, 16]}, outputs=["final", "z"],
                                   opset=17))
    scan_report, relu = report.nodes
    assert scan_report.output_shapes == [[16], [5, 16]]
    # Written: 16·4 B = 64 B final state + 5·16·4 B = 320 B stacked = 384 B; 5 Adds of 16.
    assert (scan_report.bytes_written, scan_report.flops) == (384, 80)
    assert relu.flops == 5 * 16


def test_a_loop_carried_value_grown_by_a_concat_each_trip_has_all_the_pieces():
    # torchvision's keypoint loop: xy = cat((xy.float(), piece)) from an empty (0, 3) start,
    # the condition an outer constant true (as traced); 4 trips of a 1×3 piece: a 4×3 result,
    # which a MatMul by a 3×2 weight reads: 4·3·2 = 24 MACs.
    body = _loop_body(
        [node("Relu", ["x"], ["piece"]), node("Cast", ["acc"], ["acc_float"], to=1),
         node("Concat", ["acc_float", "piece"], ["acc_next"], axis=0),
         node("Identity", ["go"], ["cond_out"])],
        "acc", ["cond_out", "acc_next"])
    loop = node("Loop", ["trips", "go", "empty"], ["all"], body=body)
    weights = [weight("trips", (), np.int64, 4), weight("go", (), np.bool_, True),
               weight("w", (3, 2)), weight("empty", (0, 3))]
    report = onnxflops.count(model([loop, node("MatMul", ["all", "w"], ["y"])],
                                   {"x": [1, 3]}, weights, opset=17))
    assert not report.uncosted, report.uncosted
    matmul = next(n for n in report.nodes if n.op_type == "MatMul")
    assert matmul.input_shapes[0] == [4, 3]
    assert matmul.macs == 4 * 3 * 2
