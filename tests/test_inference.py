"""Shapes node by node: ONNX inference once per distinct kind of node, shape arithmetic on the way."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxflops
from helpers import model, node, weight
from onnxflops.api import count_with_model
from onnxflops.ops import HOLDS_SUBGRAPHS
from onnxflops.analysis.analyze import analyze


def residual_blocks(blocks: int, width: int = 8) -> onnx.ModelProto:
    """`blocks` alike blocks MatMul → Add → Relu → Reshape → Reshape, each with its own weights."""
    nodes, weights, x = [], [weight("to_heads", (4,), np.int64, [0, 2, 2, width // 2]),
                             weight("to_rows", (3,), np.int64, [0, 2, width])], "x"
    for i in range(blocks):
        weights += [weight(f"w{i}", (width, width)), weight(f"b{i}", (width,))]
        nodes += [node("MatMul", [x, f"w{i}"], [f"m{i}"]), node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  node("Relu", [f"a{i}"], [f"r{i}"]),
                  node("Reshape", [f"r{i}", "to_heads"], [f"h{i}"]),
                  node("Reshape", [f"h{i}", "to_rows"], [f"y{i}"])]
        x = f"y{i}"
    return model(nodes, {"x": [3, 2, width]}, weights)


def test_each_kind_of_node_is_inferred_once(monkeypatch):
    calls = []
    infer = onnx.shape_inference.infer_node_outputs

    def counted(schema, proto, *args, **kwargs):
        calls.append(proto.op_type)
        return infer(schema, proto, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_node_outputs", counted)
    m = residual_blocks(50)
    analyze(m)
    # MatMul, Add, Relu, and the two Reshapes (different target shapes): five kinds of 250 nodes.
    assert sorted(calls) == ["Add", "MatMul", "Relu", "Reshape", "Reshape"]
    report = onnxflops.count(m)
    assert report.total.macs == 50 * (3 * 2) * 8 * 8
    assert report.nodes[-1].output_shapes == [[3, 2, 8]]
    assert report.nodes[3].output_shapes == [[3, 2, 2, 4]]  # 3·2·8 = 48 elements kept


def test_shape_arithmetic_is_evaluated_before_the_reshape_that_reads_it():
    # Reshape(x, Concat(Shape(x)[0], 2·Shape(x)[1], [−1])): values ONNX's data propagation folds.
    nodes = [node("Shape", ["x"], ["s"]),
             node("Gather", ["s", "zero"], ["n"], axis=0), node("Gather", ["s", "one"], ["c"], axis=0),
             node("Mul", ["c", "two"], ["c2"]),
             node("Concat", ["n", "c2", "minus_one"], ["shape"], axis=0),
             node("Reshape", ["x", "shape"], ["y"]), node("MatMul", ["y", "w"], ["z"])]
    constants = [weight("zero", (1,), np.int64, [0]), weight("one", (1,), np.int64, [1]),
                 weight("two", (1,), np.int64, [2]), weight("minus_one", (1,), np.int64, [-1]),
                 weight("w", (2, 5))]
    report = onnxflops.count(model(nodes, {"x": [4, 6, 4]}, constants))
    assert [n.op_type for n in report.nodes] == ["Reshape", "MatMul"]  # the rest is constant
    assert report.nodes[0].output_shapes == [[4, 12, 2]]
    assert report.total.macs == 4 * 12 * 2 * 5


def test_a_node_inference_rejects_is_an_error_naming_it():
    # onnxruntime runs ONNX's inference strictly when it loads a model, and refuses this one.
    bad = node("MatMul", ["x", "w"], ["y"], name="mismatched")  # inner dims 3 and 4
    with pytest.raises(onnxflops.OnnxFlopsError,
                       match=r"node 'mismatched' \(MatMul\): ONNX's shape inference refuses it.*"
                             "Incompatible dimensions"):
        onnxflops.count(model([bad], {"x": [2, 3]}, [weight("w", (4, 5))]))


def test_loop_bodies_are_typed_with_the_node():
    # A loop of 3 steps whose body multiplies the carried [2, 4] state by a weight of the outer scope.
    body = helper.make_graph(
        [node("MatMul", ["h", "w"], ["h_next"]), node("Identity", ["cond"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, None)])
    loop = node("Loop", ["steps", "", "x"], ["y"], body=body)
    m = model([loop], {"x": [2, 4]}, [weight("steps", (), np.int64, 3), weight("w", (4, 4))])
    analyzed = analyze(m)
    assert analyzed.graph.info("y").dtype == TensorProto.FLOAT  # its shape: unknown to ONNX too
    report = onnxflops.count(m)
    assert report.total.macs == 3 * 2 * 4 * 4
    assert report.total.params == 16


def test_canonicalize_leaves_the_bound_model_as_onnxruntime_runs_it():
    half, one, root2 = (helper.make_node("Constant", [], [n], value=helper.make_tensor(
        n, TensorProto.FLOAT, [], [v])) for n, v in (("half", 0.5), ("one", 1.0),
                                                     ("r2", math.sqrt(2))))
    gelu = [half, one, root2, node("Div", ["x", "r2"], ["d"]), node("Erf", ["d"], ["e"]),
            node("Add", ["e", "one"], ["p"]), node("Mul", ["x", "p"], ["xp"]),
            node("Mul", ["xp", "half"], ["y"])]
    counted = count_with_model(model(gelu, {"x": [2, 8]}, opset=20))
    assert [n.op_type for n in counted.report.nodes] == ["Gelu"]
    assert [n.op_type for n in counted.bound.graph.node] == [n.op_type for n in gelu]


@pytest.mark.parametrize("blocks", [1, 7])
def test_node_by_node_types_equal_whole_model_inference(blocks):
    m = residual_blocks(blocks)
    for i in m.graph.input:
        i.type.tensor_type.shape.dim[0].dim_value = 3
    whole = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    expected = {vi.name: tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
                for vi in [*whole.graph.value_info, *whole.graph.output]}
    view = analyze(m).graph
    assert {name: view.info(name).shape for name in expected} == expected


def test_the_standard_ops_known_to_hold_subgraphs_are_all_there_are():
    graph_attributes = (onnx.defs.OpSchema.AttrType.GRAPH, onnx.defs.OpSchema.AttrType.GRAPHS)
    holding = {s.name for s in onnx.defs.get_all_schemas_with_history()
               if s.domain == "" and any(a.type in graph_attributes for a in s.attributes.values())}
    assert holding == HOLDS_SUBGRAPHS


def test_one_hot_reads_a_float_depth():
    # OneHot's depth may be of any numeric type (whole-model inference reads it too): a float 7 makes 7 classes, 2x3 ids → 2x3x7;
    # the MatMul by a 7x4 weight then costs 2·3·7·4 MACs.
    m = model([node("OneHot", ["ids", "depth", "values"], ["hot"]),
               node("MatMul", ["hot", "w"], ["y"])],
              {"ids": [2, 3]},
              [weight("depth", (), value=7.0), weight("values", (2,), value=[0.0, 1.0]),
               weight("w", (7, 4))],
              input_type=TensorProto.INT64)
    report = onnxflops.count(m)
    assert report.nodes[0].output_shapes == [[2, 3, 7]]
    assert not report.uncosted
    assert report.total.macs == 2 * 3 * 7 * 4


def test_a_known_dim_of_a_data_dependent_shape_reaches_a_reshape():
    # NonZero of a rank-2 tensor is 2×(count of non-zeros): Shape(nz)[0] is 2 whatever the data,
    # so x6 reshapes to 2x3 and the MatMul by a 3x4 weight costs 2·3·4 MACs.
    m = model([node("NonZero", ["x"], ["nz"]),
               node("Shape", ["nz"], ["shape"]),
               node("Gather", ["shape", "first"], ["rows"], axis=0),
               node("Concat", ["rows", "three"], ["target"], axis=0),
               node("Reshape", ["x6", "target"], ["r"]),
               node("MatMul", ["r", "w"], ["y"])],
              {"x": [3, 5], "x6": [6]},
              [weight("first", (1,), np.int64, [0]), weight("three", (1,), np.int64, [3]),
               weight("w", (3, 4))])
    report = onnxflops.count(m)
    assert next(n for n in report.nodes if n.op_type == "Reshape").output_shapes == [[2, 3]]
    assert not report.uncosted
    assert report.total.macs == 2 * 3 * 4


def test_dims_inference_cannot_find_have_no_names_that_could_look_equal():
    # Two loops with run-time trip counts, each inferred as a one-node model, whose stacked
    # outputs have an unknown first dim: ONNX would name both `unk__0`.
    def loop(trips: str, out: str) -> onnx.NodeProto:
        body = helper.make_graph(
            [node("Identity", ["cond"], ["cond_out"]), node("Identity", ["v"], ["scan"])], "body",
            [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
            [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
             helper.make_tensor_value_info("scan", TensorProto.FLOAT, [3])])
        return node("Loop", [trips, ""], [out], body=body)

    m = model([loop("n", "a"), loop("k", "b")], {"n": [], "k": []}, [weight("v", (3,))],
              outputs=["a", "b"], input_type=TensorProto.INT64)
    report = onnxflops.count(m)
    assert [n.output_shapes for n in report.nodes] == [[[None, 3]], [[None, 3]]]


def _resize_to_given_sizes(declared):
    """y = Resize(x, sizes) with x 1x1x4x4 and `sizes` a graph input (data: inference cannot
    say the output's shape), then y·W, W 8x3; the model declares y as `declared`."""
    nodes = [node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest"),
             node("MatMul", ["y", "w"], ["z"])]
    graph = helper.make_graph(
        nodes, "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
                          helper.make_tensor_value_info("sizes", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], [weight("w", (8, 3))],
        value_info=[helper.make_tensor_value_info("y", TensorProto.FLOAT, declared)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_a_shape_inference_cannot_find_is_taken_as_the_model_declares_it():
    # y declared 1x1x8x8: y·W is 1·1·8·8·3 = 192 MACs.
    report = onnxflops.count(_resize_to_given_sizes([1, 1, 8, 8]))
    assert report.complete
    assert report.total.macs == 8 * 8 * 3
    assert report.nodes[0].output_shapes == [[1, 1, 8, 8]]


def test_a_declared_shape_that_contradicts_inference_is_refused():
    # Resize keeps its input's rank (4): a declared rank-3 output contradicts it.
    with pytest.raises(onnxflops.OnnxFlopsError,
                       match=r"declares its output 'y' 1x8x8, but it is \?x\?x\?x\?"):
        onnxflops.count(_resize_to_given_sizes([1, 8, 8]))


def test_a_reduce_over_an_empty_axes_input_has_its_shape():
    # An empty `axes` input (shape [0]) reduces every axis (noop_with_empty_axes=0): x 2x3x4 to
    # 1x1x1, 24 − 1 = 23 adds; its value needs no data, there being none to read.
    graph = helper.make_graph(
        [node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)], "reduce",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
         helper.make_tensor_value_info("axes", TensorProto.INT64, [0])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    report = onnxflops.count(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    assert report.complete
    assert report.nodes[0].output_shapes == [[1, 1, 1]]
    assert report.total.flops == 2 * 3 * 4 - 1


@pytest.mark.parametrize("op_type", ["ReduceL2", "ReduceLogSumExp"])
def test_an_op_costed_by_its_body_takes_the_shape_declared_for_its_output(op_type):
    # x 2x3x4 reduced over axes read from an input (data), the output declared 2x1x4: the body
    # (a ReduceSum between shape-keeping ops) is costed as with the axes a constant, [1].
    def reduce_model(axes_known: bool):
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])]
        if not axes_known:
            inputs.append(helper.make_tensor_value_info("axes", TensorProto.INT64, [1]))
        graph = helper.make_graph(
            [node(op_type, ["x", "axes"], ["y"], keepdims=1)], "reduce", inputs,
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1, 4])],
            [weight("axes", None, np.int64, [1])] if axes_known else [])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])

    given = onnxflops.count(reduce_model(axes_known=False))
    constant = onnxflops.count(reduce_model(axes_known=True))
    assert given.complete
    assert given.total.flops == constant.total.flops > 0
