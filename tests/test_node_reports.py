"""Each field of a node's report holds its own number: every field distinct, derived by hand."""

import numpy as np
import onnx
from onnx import TensorProto, helper

import onnxflops


def test_every_field_of_a_node_report_holds_its_own_number():
    weights = [onnx.numpy_helper.from_array(np.ones(shape, np.float32), name=name)
               for name, shape in (("w", (8, 2)), ("s", (2,)), ("b", (2,)), ("mean", (2,)),
                                   ("var", (2,)))]
    weights.append(onnx.numpy_helper.from_array(np.arange(3, dtype=np.int64), name="c"))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
             helper.make_node("BatchNormalization", ["y", "s", "b", "mean", "var"], ["z"], name="bn"),
             helper.make_node("Add", ["i", "c"], ["k"], name="add")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]),
                     helper.make_tensor_value_info("i", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 2]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [3])], weights)
    report = onnxflops.count(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    fields = ("name", "op_type", "category", "macs", "flops", "int_ops", "params", "buffers",
              "bytes_read", "bytes_written", "input_shapes", "output_shapes", "detail")
    got = {n.name: tuple(getattr(n, f) for f in fields) for n in report.nodes}
    # 4×8 · 8×2: 64 MACs, 128 FLOPs, 16 params; reads (32 + 16) floats, writes 8.
    assert got["mm"] == ("mm", "MatMul", "contraction", 64, 128, 0, 16, 0, 192, 32,
                         [[4, 8], [8, 2]], [[4, 2]], None)
    # Scale and bias are parameters, the running mean and variance buffers.
    assert got["bn"][6:8] == (4, 4)
    # Three int64 additions: integer work, and an int64 constant is no parameter.
    assert got["add"] == ("add", "Add", "elementwise", 0, 0, 3, 0, 0, 48, 24, [[3], [3]], [[3]],
                          None)
