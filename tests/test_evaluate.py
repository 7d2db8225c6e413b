"""Shape arithmetic evaluated with numpy gives what onnx's reference evaluator gives."""

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from onnxflops.analysis.evaluate import evaluate

FEEDS = {
    "a": np.arange(24, dtype=np.int64).reshape(2, 3, 4),
    "starts": np.array([-1, 10], np.int64), "ends": np.array([-100, -2**62], np.int64),
    "axes": np.array([2, -2], np.int64), "steps": np.array([-1, -2], np.int64),
    "new_axes": np.array([-1, 0], np.int64), "indices": np.array([-1, 0], np.int64),
    "shape": np.array([0, -1], np.int64), "first": np.array([0], np.int64),
    "ones": np.array([1], np.int64), "one": np.array(1, np.int64),
    "three": np.array(3, np.int64), "eleven": np.array(11, np.int64),
    "element_indices": np.array([[[-1, 0]] * 3] * 2, np.int64),
    "like": np.array(0.0, np.float32), "to_3x1x4": np.array([3, 1, 4], np.int64),
    "column": np.array([[1], [0]], np.int64), "flags": np.array([True, False]),
    "floats": np.array([4.0, 2.0, 0.125, -1.0], np.float32),
}
NODES = [
    helper.make_node("Slice", ["a", "starts", "ends", "axes", "steps"], ["slice"]),
    helper.make_node("Unsqueeze", ["a", "new_axes"], ["unsqueeze"]),
    helper.make_node("Squeeze", ["unsqueeze", "first"], ["squeeze"]),
    helper.make_node("Gather", ["a", "indices"], ["gather"], axis=1),
    helper.make_node("Gather", ["shape", "one"], ["gather_scalar"]),
    helper.make_node("Reshape", ["a", "shape"], ["reshape"]),
    helper.make_node("Shape", ["a"], ["shape_tail"], start=-2),
    helper.make_node("Size", ["a"], ["size"]),
    helper.make_node("Range", ["three", "eleven", "three"], ["range"]),
    helper.make_node("Cast", ["a"], ["cast"], to=onnx.TensorProto.FLOAT),
    helper.make_node("ConstantOfShape", ["ones"], ["filled"],
                     value=helper.make_tensor("v", onnx.TensorProto.INT64, [1], [5])),
    helper.make_node("Concat", ["starts", "ends", "shape_tail"], ["concat"], axis=0),
    helper.make_node("Neg", ["starts"], ["neg"]),
    helper.make_node("Equal", ["starts", "ends"], ["equal"]),
    helper.make_node("Where", ["equal", "starts", "ends"], ["where"]),
    helper.make_node("Mul", ["gather_scalar", "three"], ["mul"]),
    helper.make_node("GatherElements", ["a", "element_indices"], ["gather_elements"], axis=2),
    helper.make_node("CastLike", ["a", "like"], ["cast_like"]),
    helper.make_node("Expand", ["column", "to_3x1x4"], ["expand"]),  # (2,1) and (3,1,4): 3×2×4
    helper.make_node("Transpose", ["a"], ["transpose"], perm=[2, 0, 1]),
    helper.make_node("Transpose", ["a"], ["transpose_reversed"]),
    helper.make_node("CumSum", ["a", "one"], ["cumsum"]),
    helper.make_node("Max", ["starts", "ends", "three"], ["max"]),
    helper.make_node("Min", ["starts", "ends"], ["min"]),
    helper.make_node("Not", ["flags"], ["not"]),
    helper.make_node("Sqrt", ["floats"], ["sqrt"]),
]


def test_shape_ops_match_the_reference_evaluator():
    graph = helper.make_graph(
        NODES, "arithmetic", [],
        [helper.make_tensor_value_info(n.output[0], onnx.TensorProto.UNDEFINED, None)
         for n in NODES],
        [onnx.numpy_helper.from_array(v, name=k) for k, v in FEEDS.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    expected = dict(zip([n.output[0] for n in NODES], ReferenceEvaluator(model).run(None, {})))
    got = evaluate(NODES, FEEDS, 17)
    for name, want in expected.items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
        np.testing.assert_array_equal(got[name], want, err_msg=name)
    # By hand: on axis 1 the start 10 clamps to row 2, stepping -2 to row 0; axis 2 runs 3 down to 0.
    assert got["slice"].tolist() == [[[11, 10, 9, 8], [3, 2, 1, 0]],
                                     [[23, 22, 21, 20], [15, 14, 13, 12]]]
    # Expand broadcasts both ways: (2, 1) against [3, 1, 4] is 3×2×4, rows of 1 then of 0.
    assert got["expand"].shape == (3, 2, 4) and got["expand"][2].tolist() == [[1] * 4, [0] * 4]


def test_ops_it_does_not_cover_are_left_to_the_reference_evaluator():
    with pytest.raises(NotImplementedError):
        evaluate([helper.make_node("Div", ["a", "a"], ["q"])], FEEDS, 17)
    with pytest.raises(NotImplementedError):
        evaluate([helper.make_node("CumSum", ["a", "one"], ["c"], reverse=1)], FEEDS, 17)
    with pytest.raises(NotImplementedError):  # Squeeze/Unsqueeze axes were attributes before 13
        evaluate(NODES[:1], FEEDS, 12)


def test_one_failed_evaluation_costs_only_what_depends_on_it():
    """A constant node neither evaluator can run (an op of a custom domain; a Reshape to a size
    its data lacks was one, now refused as invalid) sits beside the shape arithmetic of another
    Reshape: that Reshape's shape is still found, so the MatMul after it costs 2·8·4 = 64 MACs."""
    import onnxflops

    nodes = [
        helper.make_node("Unknown", ["data", "bad_shape"], ["broken"], domain="com.example"),
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Max", ["x_shape", "target"], ["new_shape"]),
        helper.make_node("Reshape", ["x", "new_shape"], ["y"]),
        helper.make_node("MatMul", ["y", "w"], ["z"]),
        helper.make_node("Shape", ["broken"], ["broken_shape"]),
        helper.make_node("Reshape", ["z", "broken_shape"], ["out"]),
    ]
    weights = {"data": np.array([[1, 2]], np.int64), "bad_shape": np.array([3], np.int64),
               "target": np.array([2, 8], np.int64), "w": np.ones((8, 4), np.float32)}
    graph = helper.make_graph(
        nodes, "partly_evaluable",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, None),
         helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(v, name=k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example", 1)])
    report = onnxflops.count(model)
    assert report.by_op_type()["MatMul"].macs == 64
