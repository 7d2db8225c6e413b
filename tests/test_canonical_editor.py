"""The canonical editor keeps its indices current on each edit (onnxflops/canonical/editor.py).

After any sequence of edits, its rows, node order, producers and consumers must be what a fresh
read of the edited graph finds: the rules read them instead of reading the graph again.
"""

from __future__ import annotations

import numpy as np
import onnx
from helpers import model, node, weight
from onnx import TensorProto, helper

from onnxflops.canonical.editor import Editor
from onnxflops.canonical.structural import (
    read_loop_invariants_from_outer_scope,
    scale_products_not_operands,
)
from onnxflops.graph import GraphView


def const(name: str, value, dtype=np.float32) -> onnx.NodeProto:
    return node("Constant", [], [name], value=onnx.numpy_helper.from_array(
        np.array(value, dtype=dtype), name))


def fresh_read(graph: onnx.GraphProto) -> Editor:
    editor = Editor(graph, GraphView(graph), 18)
    editor.consumers  # noqa: B018 - built on first use
    return editor


def assert_current(editor: Editor) -> None:
    """The editor's indices equal those a fresh read of its graph builds."""
    fresh = fresh_read(editor.graph)
    assert [row[0] for row in editor.rows] == list(editor.graph.node)
    assert editor.rows == fresh.rows
    assert editor.view.rows() is editor.rows  # the view reads the edited rows
    assert editor.producer == fresh.producer
    assert {name: sorted(map(id, users)) for name, users in editor.consumers.items()} \
        == {name: sorted(map(id, users)) for name, users in fresh.consumers.items()}
    keys = [editor.order(row[0]) for row in editor.rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def layers_of_scaled_attention(layers: int) -> onnx.ModelProto:
    """softmax(q·kᵀ)·v per layer with √(1/√d) on q and on kᵀ (torch's SDPA), then a Loop whose
    state holds a weight."""
    nodes, x = [const("s", 8 ** -0.25)], "x"
    for i in range(layers):
        nodes += [node("Mul", [x, "s"], [f"q{i}"]), node("Transpose", [x], [f"t{i}"], perm=[0, 2, 1]),
                  node("Mul", [f"t{i}", "s"], [f"k{i}"]),
                  node("MatMul", [f"q{i}", f"k{i}"], [f"a{i}"]),
                  node("Softmax", [f"a{i}"], [f"p{i}"], axis=-1),
                  node("MatMul", [f"p{i}", x], [f"y{i}"])]
        x = f"y{i}"
    body = helper.make_graph(
        [node("Identity", ["cond"], ["cond_out"]), node("MatMul", ["h", "w_state"], ["h_out"]),
         node("Add", ["h_out", x], ["h_sum"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 8, 8]),
                 helper.make_tensor_value_info("w_state", TensorProto.FLOAT, [8, 8])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_sum", TensorProto.FLOAT, [1, 8, 8]),
         helper.make_tensor_value_info("w_state", TensorProto.FLOAT, [8, 8])])
    nodes += [const("trips", 3, np.int64), const("go", True, np.bool_),
              node("Loop", ["trips", "go", x, "w"], ["h_final", "w_final"], body=body),
              node("MatMul", ["h_final", "w_final"], ["out"])]
    return model(nodes, {"x": [1, 8, 8]}, [weight("w", (8, 8))], outputs=["out"], opset=18)


def test_rewriting_every_layer_leaves_the_indices_a_fresh_read_finds():
    graph = onnx.shape_inference.infer_shapes(layers_of_scaled_attention(3)).graph
    editor = fresh_read(graph)
    before = len(graph.node)
    assert read_loop_invariants_from_outer_scope(editor)
    assert_current(editor)
    assert list(graph.node[-1].input) == ["h_final", "w"]  # w_final renamed to the weight it is
    assert scale_products_not_operands(editor)
    assert_current(editor)
    # Per layer: two scaling Muls out, one Constant and one Mul on the product in.
    assert len(graph.node) == before
    assert [n.op_type for n in graph.node].count("Mul") == 3
    assert [list(n.input) for n in graph.node if n.op_type == "MatMul" and n.input[1][0] == "t"] \
        == [["x", "t0"], ["y0", "t1"], ["y1", "t2"]]


def test_inserting_again_and_again_at_one_place_keeps_the_order():
    # Each insert halves the gap between two order keys (1.0 and 2.0 here): floats run out after
    # ~50, and the editor numbers its rows afresh.
    graph = model([node("Relu", ["x"], ["a"]), node("Relu", ["a"], ["b"]),
                   node("Relu", ["b"], ["c"])], {"x": [2]}).graph
    editor = fresh_read(graph)
    anchor, last = editor.rows[1][0], editor.rows[2][0]
    for i in range(80):
        editor.insert_after(anchor, [node("Neg", ["a"], [f"n{i}"])])
    assert [n.output[0] for n in graph.node] == ["a", "b", *(f"n{i}" for i in reversed(range(80))),
                                                 "c"]
    assert editor.order(last) > 2.0  # renumbered
    assert_current(editor)
    editor.remove([editor.rows[6][0], editor.rows[2][0]])
    editor.insert_before(last, [node("Neg", ["b"], ["before_c"])])
    assert [n.output[0] for n in graph.node][-3:] == ["n0", "before_c", "c"]
    assert "n79" not in editor.producer and "n75" not in editor.producer  # rows 2 and 6
    assert_current(editor)


def scale_cone(op_type: str) -> Editor:
    """s = op(CastLike(1/√8, q)): a constant computed from a constant, its value not yet known."""
    graph = onnx.shape_inference.infer_shapes(model(
        [const("inv_sqrt_d", 8 ** -0.5), node("CastLike", ["inv_sqrt_d", "q"], ["c"]),
         node(op_type, ["c"], ["s"]), node("Mul", ["q", "s"], ["y"])], {"q": [2, 8]},
        opset=18)).graph
    view = GraphView(graph)
    view.mark_constants()
    assert view.is_constant("s") and view.value("s") is None
    return Editor(graph, view, 18)


def test_a_constant_cone_is_run_by_numpy_where_it_covers_the_ops(monkeypatch):
    import onnx.reference

    class Refused:
        def __init__(self, *args):
            raise AssertionError("the reference evaluator was set up")

    monkeypatch.setattr(onnx.reference, "ReferenceEvaluator", Refused)
    assert scale_cone("Sqrt").scalar("s") == np.sqrt(np.float32(8 ** -0.5))
    assert scale_cone("Reciprocal").scalar("s") is None  # numpy lacks it; the reference refused


def test_a_constant_cone_numpy_does_not_cover_goes_to_the_reference_evaluator():
    assert scale_cone("Reciprocal").scalar("s") == np.reciprocal(np.float32(8 ** -0.5))
