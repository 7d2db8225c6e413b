"""Shape arithmetic that only resolves in rounds: each evaluated shape feeds the next Shape op."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnxflops


def _flatten_by_reduce_prod(x: str, y: str, tag: str) -> list[onnx.NodeProto]:
    """y = Reshape(x, [prod(shape(x))]): ReduceProd is beyond ONNX's data propagation."""
    return [
        helper.make_node("Shape", [x], [f"{tag}_shape"]),
        helper.make_node("ReduceProd", [f"{tag}_shape"], [f"{tag}_numel"], keepdims=1),
        helper.make_node("Reshape", [x, f"{tag}_numel"], [y]),
    ]


def test_shapes_found_by_one_round_of_evaluation_feed_the_next_round():
    nodes = (_flatten_by_reduce_prod("x", "flat", "first")
             + [helper.make_node("Relu", ["flat"], ["relu"])]
             + _flatten_by_reduce_prod("relu", "again", "second")
             + [helper.make_node("Mul", ["again", "two"], ["y"])])
    graph = helper.make_graph(
        nodes, "rounds", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])

    report = onnxflops.count(model)

    assert report.uncosted == []
    assert report.total.flops == 24 + 24  # the Relu and the Mul, 2·3·4 elements each
