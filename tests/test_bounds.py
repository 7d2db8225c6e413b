"""Sizes that depend on data (NonZero, TopK of a computed k, NonMaxSuppression, Unique, Compress)
are counted at their upper bound, and every node so counted says so: in its row and a warning."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto

import onnxflops
from helpers import model, node, typed_model, weight

FLOAT, INT64 = TensorProto.FLOAT, TensorProto.INT64


def bound_rows(report):
    return [n.op_type for n in report.nodes if n.bound]


def test_top_k_of_a_k_computed_from_data_takes_the_whole_axis():
    # k = the number of positive entries of `m`: between 0 and all 6 elements of the axis
    nodes = [node("Greater", ["m", "zero"], ["pos"]), node("Cast", ["pos"], ["pi"], to=7),
             node("ReduceSum", ["pi"], ["k"], keepdims=1),
             node("TopK", ["x", "k"], ["values", "indices"], axis=1),
             node("MatMul", ["values", "w"], ["y"])]
    report = onnxflops.count(typed_model(nodes, {"x": (FLOAT, [3, 6]), "m": (FLOAT, [6])},
                                         {"zero": np.float32(0),
                                          "w": np.ones((6, 2), np.float32)}))
    assert not report.uncosted
    top_k = next(n for n in report.nodes if n.op_type == "TopK")
    assert top_k.output_shapes == [[3, 6], [3, 6]]
    # each of the 18 elements offered to a heap of 6: ⌈log2 7⌉ = 3 comparisons
    assert top_k.flops == 18 * 3
    assert report.total.macs == 3 * 6 * 2
    assert bound_rows(report) == ["TopK", "MatMul"]


def test_top_k_of_a_constant_k_is_exact():
    nodes = [node("TopK", ["x", "k"], ["values", "indices"], axis=1),
             node("MatMul", ["values", "w"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [3, 6]}, [weight("k", (1,), np.int64, [2]),
                                                          weight("w", (2, 4))]))
    assert bound_rows(report) == [] and not report.warnings
    assert report.total.macs == 3 * 2 * 4


def test_non_max_suppression_keeps_every_box_it_may():
    # 2 images × 3 classes × at most 5 kept boxes (of 8) = 30 selected rows of 3 indices
    nodes = [node("NonMaxSuppression", ["boxes", "scores", "keep"], ["sel"]),
             node("Cast", ["sel"], ["self"], to=1), node("MatMul", ["self", "w"], ["y"])]
    report = onnxflops.count(typed_model(
        nodes, {"boxes": (FLOAT, [2, 8, 4]), "scores": (FLOAT, [2, 3, 8])},
        {"keep": np.array([5], np.int64), "w": np.ones((3, 4), np.float32)}))
    assert not report.uncosted
    assert report.nodes[0].output_shapes == [[30, 3]]
    assert report.total.macs == 30 * 3 * 4 + 0  # the MatMul; NMS costs FLOPs, no MACs
    assert bound_rows(report) == ["NonMaxSuppression", "Cast", "MatMul"]


def test_unique_of_all_items_distinct():
    nodes = [node("Unique", ["x"], ["u", "idx", "inv", "counts"], axis=0),
             node("MatMul", ["u", "w"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [5, 3]}, [weight("w", (3, 2))]))
    assert not report.uncosted
    assert report.nodes[0].output_shapes == [[5, 3], [5], [5], [5]]
    assert report.total.macs == 5 * 3 * 2


def test_compress_keeps_every_slice_its_condition_may():
    # 4 conditions over 6 rows: at most 4 rows kept
    nodes = [node("Compress", ["x", "c"], ["kept"], axis=0), node("MatMul", ["kept", "w"], ["y"])]
    m = typed_model(nodes, {"x": (FLOAT, [6, 3]), "c": (TensorProto.BOOL, [4])},
                    {"w": np.ones((3, 2), np.float32)})
    report = onnxflops.count(m)
    assert report.nodes[0].output_shapes == [[4, 3]]
    assert report.total.macs == 4 * 3 * 2


def test_the_bound_is_in_the_json_and_the_table():
    nodes = [node("NonZero", ["x"], ["nz"]), node("Cast", ["nz"], ["f"], to=1),
             node("Relu", ["f"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [2, 3]}))
    doc = json.loads(report.to_json())
    assert [n.get("bound") for n in doc["nodes"]] == [True, True, True]
    assert "warning: 3 node(s) counted at an upper bound" in report.to_table()
    assert "every one of the 6 elements nonzero" in report.to_table()


def test_non_zero_of_a_constant_is_evaluated_not_bounded():
    # a stored mask with 3 nonzeros: its indices are known, 3 of them
    nodes = [node("NonZero", ["mask"], ["nz"]), node("Cast", ["nz"], ["f"], to=1),
             node("MatMul", ["x", "f"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [5, 1]},
                                   [weight("mask", None, np.int64, [0, 2, 0, 1, 4])]))
    assert not report.warnings and not any(n.bound for n in report.nodes)
    assert report.total.macs == 5 * 1 * 3


def test_a_top_k_on_an_axis_out_of_range_is_an_error_not_a_traceback():
    # onnxruntime's load refuses it (ONNX's strict inference): no count of it means anything.
    nodes = [node("TopK", ["x", "k"], ["v", "i"], axis=9), node("Relu", ["v"], ["y"])]
    with pytest.raises(onnxflops.OnnxFlopsError, match=r"node 'v' \(TopK\): .*Invalid value "
                                                       r"for attribute axis"):
        onnxflops.count(typed_model(nodes, {"x": (FLOAT, [2, 3]), "k": (INT64, [1])}))
