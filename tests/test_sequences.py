"""Ops on sequences typed element by element: what is taken out of a sequence has its exact shape,
so the nodes after it are costed; a sequence's bytes are its elements'."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest

import onnxflops
from helpers import costed, model, node, weight

B, L, D, OUT = 2, 10, 4, 5  # x is B×L×D (4-byte floats); w is D×OUT


def count(nodes, weights=(), outputs=None):
    return costed(model(nodes, {"x": [B, L, D]}, [weight("w", (D, OUT)), *weights],
                        outputs=outputs))


def by_op(report):
    return {n.op_type: n for n in report.nodes}


def test_split_to_sequence_by_sizes_then_sequence_at():
    nodes = [node("SplitToSequence", ["x", "split"], ["seq"], axis=1),
             node("SequenceAt", ["seq", "one"], ["e"]), node("MatMul", ["e", "w"], ["y"])]
    report = count(nodes, [weight("split", None, np.int64, [3, 7]),
                           weight("one", (), np.int64, 1)])
    ops = by_op(report)
    assert ops["SequenceAt"].output_shapes == [[B, 7, D]]  # the second part: 7 of the 10 rows
    assert report.total.macs == B * 7 * D * OUT == 280
    # the split reads x and its two sizes, writes x's 320 bytes as two parts
    assert (ops["SplitToSequence"].bytes_read, ops["SplitToSequence"].bytes_written) == \
        (4 * B * L * D + 8 * 2, 4 * B * L * D)
    # SequenceAt reads the part it takes (2·7·4 floats) and its position
    assert ops["SequenceAt"].bytes_read == 4 * B * 7 * D + 8 == 232


@pytest.mark.parametrize("keepdims, shape", [(1, [B, 1, D]), (0, [B, D])])
def test_split_to_sequence_without_sizes_takes_one_index_each(keepdims, shape):
    nodes = [node("SplitToSequence", ["x"], ["seq"], axis=1, keepdims=keepdims),
             node("SequenceAt", ["seq", "last"], ["e"]), node("MatMul", ["e", "w"], ["y"])]
    report = count(nodes, [weight("last", (), np.int64, -1)])
    assert by_op(report)["SequenceAt"].output_shapes == [shape]
    assert report.total.macs == B * D * OUT


def test_split_to_sequence_by_a_scalar_size_keeps_the_remainder():
    # 10 rows in parts of 4: 4, 4, 2; the last is taken
    nodes = [node("SplitToSequence", ["x", "four"], ["seq"], axis=1),
             node("SequenceAt", ["seq", "two"], ["e"]), node("MatMul", ["e", "w"], ["y"])]
    report = count(nodes, [weight("four", (), np.int64, 4), weight("two", (), np.int64, 2)])
    assert by_op(report)["SequenceAt"].output_shapes == [[B, 2, D]]


def test_concat_from_sequence_joins_or_stacks():
    nodes = [node("SplitToSequence", ["x", "split"], ["seq"], axis=1),
             node("ConcatFromSequence", ["seq"], ["c"], axis=1), node("MatMul", ["c", "w"], ["y"])]
    report = count(nodes, [weight("split", None, np.int64, [3, 7])])
    assert by_op(report)["ConcatFromSequence"].output_shapes == [[B, L, D]]
    assert report.total.macs == B * L * D * OUT
    stacked = [node("SequenceConstruct", ["x", "x", "x"], ["seq"]),
               node("ConcatFromSequence", ["seq"], ["c"], axis=0, new_axis=1),
               node("MatMul", ["c", "w"], ["y"])]
    report = count(stacked)
    assert by_op(report)["ConcatFromSequence"].output_shapes == [[3, B, L, D]]
    assert by_op(report)["SequenceConstruct"].bytes_written == 3 * 4 * B * L * D


def test_sequence_empty_then_insert():
    nodes = [node("SequenceEmpty", [], ["empty"], dtype=1),
             node("SequenceInsert", ["empty", "x"], ["one"]),
             node("SequenceInsert", ["one", "w"], ["two"], name="second"),
             node("SequenceAt", ["two", "zero"], ["e"]), node("MatMul", ["e", "w"], ["y"])]
    # no position: the end; "second" inserts w at the end too, so element 0 is x
    report = count(nodes, [weight("zero", (), np.int64, 0)])
    assert by_op(report)["SequenceAt"].output_shapes == [[B, L, D]]
    inserted = [n for n in report.nodes if n.name == "second"][0]
    assert inserted.bytes_written == 4 * (B * L * D + D * OUT)  # the new sequence: x and w


def test_sequence_insert_at_a_position_and_erase():
    nodes = [node("SequenceConstruct", ["x"], ["one"]),
             node("SequenceInsert", ["one", "w", "zero"], ["two"]),  # w, x
             node("SequenceErase", ["two", "zero"], ["left"]),  # x
             node("SequenceAt", ["left", "zero"], ["e"]), node("MatMul", ["e", "w"], ["y"])]
    report = count(nodes, [weight("zero", (), np.int64, 0)])
    assert by_op(report)["SequenceAt"].output_shapes == [[B, L, D]]
    assert report.total.macs == B * L * D * OUT


def test_sequence_length_is_known():
    nodes = [node("SplitToSequence", ["x", "split"], ["seq"], axis=1),
             node("SequenceLength", ["seq"], ["n"]),
             node("Range", ["zero", "n", "one"], ["r"]), node("Cast", ["r"], ["rf"], to=1),
             node("MatMul", ["rf", "table"], ["y"])]
    report = count(nodes, [weight("split", None, np.int64, [3, 3, 4]),
                           weight("zero", (), np.int64, 0), weight("one", (), np.int64, 1),
                           weight("table", (3, 6))])
    assert by_op(report)["MatMul"].input_shapes[0] == [3]  # a Range over the 3 parts
    assert report.total.macs == 3 * 6


def routed_split(parts: int, x: list, axis: int, after: list, inputs=None, weights=()):
    """x split by sizes given at run time (a router's tokens per expert) into `parts`, each part
    through its expert's product (MatMul by w, D×OUT), joined back on `axis`, then `after`."""
    nodes = [node("SplitToSequence", ["x", "sizes"], ["seq"], axis=axis)]
    for i in range(parts):
        nodes += [node("SequenceAt", ["seq", f"at{i}"], [f"e{i}"]),
                  node("MatMul", [f"e{i}", "w"], [f"y{i}"], name=f"expert{i}")]
    nodes += [node("Concat", [f"y{i}" for i in range(parts)], ["y"], axis=axis), *after]
    m = model(nodes, {"x": x, "sizes": [parts], **(inputs or {})},
              [weight("w", (D, OUT)), *weights,
               *(weight(f"at{i}", (), np.int64, i) for i in range(parts))], outputs=["z"])
    m.graph.input[1].type.tensor_type.elem_type = 7  # int64 sizes given at run time
    return m


def test_a_split_by_sizes_that_are_data_takes_even_shares_labelled_routed():
    # JetMoE's eager experts: the T·k routed rows split by tokens per expert (data, from the
    # router), each part through its expert's product, joined back. Any split's products total
    # B·L·D·OUT; the parts are typed as even shares of L = 10 (3, 3, the last the rest: 4).
    report = costed(routed_split(3, [B, L, D], 1,
                                 [node("MatMul", ["y", "w2"], ["z"], name="after")],
                                 weights=[weight("w2", (OUT, 2))]))
    experts = [n for n in report.nodes if n.name.startswith("expert")]
    assert [n.input_shapes[0] for n in experts] == [[B, 3, D], [B, 3, D], [B, 4, D]]
    assert sum(n.macs for n in experts) == B * L * D * OUT == 400
    assert report.routed_macs == 400  # the experts' products, not the one after the join
    assert by_op(report)["Concat"].output_shapes == [[B, L, OUT]]
    assert report.total.macs == 400 + B * L * OUT * 2
    assert "routed: 400 MACs in 3 products of routed experts" in report.to_table()


def test_a_split_by_sizes_that_are_data_over_a_symbolic_axis_sums_to_it():
    # JetMoE's experts in the LLM prefill, its length symbolic (tokens = batch × prompt × k):
    # the parts are ⌊L/3⌋, ⌊L/3⌋ and L − 2⌊L/3⌋, so the experts' products sum to L·D·OUT
    # and the parts joined back are L long, for the product after the join to broadcast; was
    # uncosted ("shape of 'e0' is unknown").
    import sympy

    report = onnxflops.count(routed_split(3, ["tokens", D], 0,
                                          [node("Mul", ["y", "gate"], ["z"], name="gated")],
                                          inputs={"gate": ["tokens", 1]}), symbolic=True)
    assert not report.uncosted
    (tokens,) = sympy.sympify(report.total.macs).free_symbols
    assert str(tokens) == "tokens"
    assert report.total.macs == tokens * D * OUT
    assert str(by_op(report)["Mul"].output_shapes[0][0]) == "tokens"


def test_mobilevitv2_linear_attention_splits_its_qkv_by_a_sequence():
    # timm mobilevitv2 (dynamo export): qkv.split([1, d, d], dim=1) becomes SplitToSequence and
    # SequenceAt; the key times the softmax of the query was uncosted, "shape of 'mul' is
    # unknown (1x?x4x256)". Here d = 8, 4 pixels per patch, 16 patches.
    d, pixels, patches = 8, 4, 16
    nodes = [node("SplitToSequence", ["qkv", "split"], ["seq"], axis=1),
             node("SequenceAt", ["seq", "zero"], ["query"]),
             node("SequenceAt", ["seq", "one"], ["key"]),
             node("Softmax", ["query"], ["scores"], axis=-1),
             node("Mul", ["key", "scores"], ["mul"])]
    report = costed(model(nodes, {"qkv": [1, 1 + 2 * d, pixels, patches]},
                          [weight("split", None, np.int64, [1, d, d]),
                           weight("zero", (), np.int64, 0), weight("one", (), np.int64, 1)]))
    mul = by_op(report)["Mul"]
    assert mul.output_shapes == [[1, d, pixels, patches]]
    assert mul.flops == d * pixels * patches == 512


def test_a_split_into_more_parts_than_held_is_left_to_onnx_inference():
    # 10⁹ parts of one row each: never a tuple of 10⁹ element types (8 GB); ONNX's own inference
    # types the parts of a split without sizes alike, 1×1
    nodes = [node("SplitToSequence", ["x"], ["seq"], axis=1),
             node("SequenceAt", ["seq", "zero"], ["e"]), node("Relu", ["e"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [1, 10**9]},
                                   [weight("zero", (), np.int64, 0)]))
    assert not report.uncosted and report.total.flops == 1


def test_an_axis_out_of_range_is_an_error_not_a_traceback():
    # onnxruntime's load refuses it (ONNX's strict inference): no count of it means anything.
    nodes = [node("SplitToSequence", ["x"], ["seq"], axis=7),
             node("SequenceAt", ["seq", "zero"], ["e"]), node("Relu", ["e"], ["y"])]
    with pytest.raises(onnxflops.OnnxFlopsError, match=r"node 'seq' \(SplitToSequence\): .*"
                                                       r"Invalid value of attribute 'axis'"):
        onnxflops.count(model(nodes, {"x": [2, 3]}, [weight("zero", (), np.int64, 0)]))


@pytest.mark.parametrize("split, index, rows", [([3, 7], 1, 7), ([3, 7], -2, 3), (4, 2, 2),
                                                (None, 0, 1)])
def test_sequence_at_under_symbolic_dims_takes_its_part(split, index, rows):
    # DeepSeek splits q into its no-rope and rope parts through a sequence; with the batch left
    # a symbol, ONNX's inference types the parts alike and leaves the split axis unknown.
    import sympy

    inputs = ["x", "split"] if split else ["x"]
    nodes = [node("SplitToSequence", inputs, ["seq"], axis=1),
             node("SequenceAt", ["seq", "at"], ["e"]), node("MatMul", ["e", "w"], ["y"])]
    weights = [weight("w", (D, OUT)), weight("at", (), np.int64, index)]
    weights += [weight("split", np.shape(split), np.int64, split)] if split else []
    report = onnxflops.count(model(nodes, {"x": ["batch", L, D]}, weights), symbolic=True)
    batch = sympy.Symbol("batch", integer=True, positive=True)
    # [3, 7]: part 1 is 7 rows, part −2 is 3; a scalar 4 over 10 rows: 4, 4 and the last 2;
    # no sizes: one row each, kept as a dim of 1.
    assert not report.uncosted
    assert report.total.macs == batch * rows * D * OUT


# Sequence and optional graph inputs: a sequence's length is no part of its type, so it is bound.

def _sequence_input_model(nodes, weights=(), optional=False):
    """A model whose input `s` is a sequence of float tensors of undeclared shape (or an
    optional of one tensor, `optional`)."""
    from onnx import TensorProto, helper

    element = helper.make_tensor_type_proto(TensorProto.FLOAT, None)
    kind = helper.make_optional_type_proto(element) if optional else \
        helper.make_sequence_type_proto(element)
    graph = helper.make_graph(nodes, "seq", [helper.make_value_info("s", kind)],
                              [helper.make_value_info(nodes[-1].output[0], onnx.TypeProto())],
                              list(weights))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_a_sequence_input_is_bound_by_length_and_element_shape():
    # ConcatFromSequence stacks 3 elements of 1x2x2 into 3x2x2 (axis 0, new_axis 1 gives
    # 3x1x2x2; axis 0 without it 3x2x2); x·W with W 2x4: 3·2·2·4 = 48 MACs.
    m = _sequence_input_model([node("ConcatFromSequence", ["s"], ["c"], axis=0),
                               node("MatMul", ["c", "w"], ["y"])], [weight("w", (2, 4))])
    report = onnxflops.count(m, {"s": onnxflops.SequenceShape([(1, 2, 2)] * 3)})
    assert report.complete
    assert report.total.macs == 3 * 2 * 2 * 4
    assert by_op(report)["ConcatFromSequence"].output_shapes == [[3, 2, 2]]


def test_an_unbound_sequence_input_names_the_syntax():
    m = _sequence_input_model([node("ConcatFromSequence", ["s"], ["c"], axis=0)])
    with pytest.raises(onnxflops.OnnxFlopsError, match=r"--input s=seq\(LENGTH;DIMS\)"):
        onnxflops.count(m)


def test_sequence_map_runs_its_body_once_per_element():
    # The body squares each element: 2x3 and 4x3 elements, 6 + 12 = 18 multiplies.
    from onnx import TensorProto, helper

    body = helper.make_graph([node("Mul", ["e", "e"], ["sq"])], "body",
                             [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)],
                             [helper.make_tensor_value_info("sq", TensorProto.FLOAT, None)])
    m = _sequence_input_model([node("SequenceMap", ["s"], ["out"], body=body)])
    report = onnxflops.count(m, {"s": onnxflops.SequenceShape([(2, 3), (4, 3)])})
    assert report.complete
    assert report.total.flops == 2 * 3 + 4 * 3


def test_an_optional_input_is_bound_by_its_tensors_shape():
    # OptionalGetElement of a 5x2 tensor, times W 2x3: 30 MACs.
    m = _sequence_input_model([node("OptionalGetElement", ["s"], ["x"]),
                               node("MatMul", ["x", "w"], ["y"])], [weight("w", (2, 3))],
                              optional=True)
    assert onnxflops.count(m, {"s": (5, 2)}).total.macs == 5 * 2 * 3
    with pytest.raises(onnxflops.OnnxFlopsError,
                       match=re.escape("inputs={'s': shape} or inputs={'s': None}")):
        onnxflops.count(m)
    from onnxflops.errors import on_command_line

    with on_command_line(), pytest.raises(onnxflops.OnnxFlopsError,
                                          match="--input s=DIMS or --input s=none"):
        onnxflops.count(m)


def test_the_command_line_spells_a_sequence_and_no_value():
    from onnxflops.bind import parse_input_spec

    assert parse_input_spec("s=seq(3;1x2x2)") == ("s", onnxflops.SequenceShape([(1, 2, 2)] * 3))
    assert parse_input_spec("s=seq(0;4)") == ("s", onnxflops.SequenceShape([]))
    assert parse_input_spec("opt=none") == ("opt", None)
    with pytest.raises(onnxflops.OnnxFlopsError, match=r"seq\(LENGTH;DIMS\)"):
        parse_input_spec("s=seq(1x2)")


def test_an_optional_holding_a_sequence_keeps_its_optional_type_where_a_loop_carries_it():
    # ONNX's own test_loop16_seq_none: the Loop carries optional(seq(float)); bound to a sequence
    # of one scalar it was typed as the sequence, and the Loop's inference refused the model.
    m = onnx.parser.parse_model('''
        <ir_version: 8, opset_import: ["" : 16]>
        g (int64 trip_count, bool cond, optional(seq(float)) opt_seq) => (seq(float) seq_res) {
          seq_res = Loop (trip_count, cond, opt_seq) <body = loop_body (int64 i, bool c,
              optional(seq(float)) s) => (bool c_out, seq(float) s_out) {
            c_out = Identity (c)
            s_out = OptionalGetElement (s)
          }>
        }''')
    from onnxflops import SequenceShape

    report = onnxflops.count(m, {"opt_seq": SequenceShape([()])})
    assert [n.op_type for n in report.uncosted] == ["Loop"]  # its trip count is an input
    assert "trip count" in report.uncosted_summary()
