"""Integer inputs that ONNX allows as int64 alone get a Cast to int64 after the dynamo export
(an int32 index reaching ScatterND, as torch's istft gives it), read from the ops' schemas; an
input that allows int32 keeps it. Checked by ONNX's full check and by onnxruntime's result."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

# The core tests run without onnxruntime and the exporter's onnx_ir.
ort = pytest.importorskip("onnxruntime")
ir = pytest.importorskip("onnx_ir")

from onnxflops.converters.int64_inputs import cast_to_int64_where_only_int64  # noqa: E402


def overlap_add():
    """out = ScatterND(data, Unsqueeze(positions, -1), updates, add); picked = Gather(out,
    positions). ScatterND's indices are int32 and untyped in the graph (the Unsqueeze's output
    has no value_info, as in a translation's graph); Gather's take int32 as they are."""
    nodes = [helper.make_node("Constant", [], ["last"], value_ints=[-1]),
             helper.make_node("Unsqueeze", ["positions", "last"], ["index"]),
             helper.make_node("ScatterND", ["data", "index", "updates"], ["out"],
                              reduction="add"),
             helper.make_node("Gather", ["out", "positions"], ["picked"])]
    graph = helper.make_graph(
        nodes, "overlap_add",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("positions", TensorProto.INT32, [2]),
         helper.make_tensor_value_info("updates", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("picked", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


FEEDS = {"data": np.zeros(4, np.float32), "positions": np.array([1, 1], np.int32),
         "updates": np.array([1.0, 2.0], np.float32)}


def test_the_int32_index_of_a_scatter_nd_is_one_onnx_and_onnxruntime_refuse():
    with pytest.raises(onnx.shape_inference.InferenceError, match="int32"):
        onnx.checker.check_model(overlap_add(), full_check=True)
    with pytest.raises(Exception, match="int32"):
        ort.InferenceSession(overlap_add().SerializeToString())


def test_an_int32_index_where_only_int64_is_allowed_is_cast_and_the_model_runs():
    model = ir.serde.deserialize_model(overlap_add())
    assert cast_to_int64_where_only_int64(model) == 1  # ScatterND's; Gather's allows int32
    repaired = ir.serde.serialize_model(model)
    casts = [n for n in repaired.graph.node if n.op_type == "Cast"]
    assert [(list(c.input), c.attribute[0].i) for c in casts] == [(["index"], TensorProto.INT64)]
    gather = next(n for n in repaired.graph.node if n.op_type == "Gather")
    assert list(gather.input) == ["out", "positions"]
    onnx.checker.check_model(repaired, full_check=True)
    out, picked = ort.InferenceSession(repaired.SerializeToString()).run(None, FEEDS)
    # both updates added at position 1 (the frames' overlap-add), read back twice by Gather
    assert out.tolist() == [0.0, 3.0, 0.0, 0.0] and picked.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("positions", [TensorProto.INT64, TensorProto.UNDEFINED])
def test_an_int64_index_or_one_of_unknown_type_is_left_as_it_is(positions):
    """int64 already; or typed by nothing inference can read: no Cast is guessed (analysis
    refuses the model, naming the node)."""
    model = overlap_add()
    model.graph.input[1].type.tensor_type.elem_type = positions
    assert cast_to_int64_where_only_int64(ir.serde.deserialize_model(model)) == 0
