"""Symbolic dims: unbound dims stay symbols, the totals are formulas in them, and substituting any
values gives exactly the count made with those values bound."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import numpy as np
import onnx
import onnx.reference
import pytest
import sympy
from onnx import TensorProto

import onnxflops
from helpers import assert_agrees_with_bound_counts, model, node, weight
from onnxflops.cli import main

INT64_END = 2**63 - 1  # 'to the end' as exporters write it
batch, seq, height, width = sympy.symbols("batch seq height width", integer=True, positive=True)


def int64(name: str, value) -> onnx.TensorProto:
    return weight(name, np.shape(value), dtype=np.int64, value=value)


def dense(inputs: dict):
    nodes = [node("MatMul", ["X", "W"], ["XW"]), node("Add", ["XW", "b"], ["Y"])]
    return model(nodes, inputs, [weight("W", (64, 32)), weight("b", (32,))])


class TestFormulas:
    def test_a_dense_layer_over_batch_and_seq(self):
        report = onnxflops.count(dense({"X": ["batch", "seq", 64]}), symbolic=True)
        assert report.total.macs == 64 * 32 * batch * seq
        assert report.total.flops == 2 * 64 * 32 * batch * seq + 32 * batch * seq
        assert report.total.bytes_written == 2 * 4 * 32 * batch * seq
        assert report.total.params == 64 * 32 + 32
        assert report.inputs == {"X": ["batch", "seq", 64]}

    def test_batch_binds_the_leading_dim_and_the_rest_stays_symbolic(self):
        report = onnxflops.count(dense({"X": ["N", "seq", 64]}), batch=3, symbolic=True)
        assert report.total.macs == 3 * 64 * 32 * seq

    def test_unnamed_and_oddly_named_dims_become_symbols_named_after_them(self):
        report = onnxflops.count(dense({"X": [None, "seq len", 64]}), symbolic=True)
        x_0, seq_len = sympy.symbols("X_0 seq_len", integer=True, positive=True)
        assert report.total.macs == 64 * 32 * x_0 * seq_len

    def test_a_reshape_to_a_computed_shape(self):
        # [batch, seq, 12] → Reshape([4·batch, −1, 3]) → MatMul by [3, 5]: the target is computed
        # from Shape, Gather and Mul, which ONNX inference does not carry symbols through.
        nodes = [node("Shape", ["X"], ["s"]), node("Gather", ["s", "zero"], ["b"], axis=0),
                 node("Mul", ["b", "four"], ["b4"]), node("Unsqueeze", ["b4", "axes"], ["b4u"]),
                 node("Concat", ["b4u", "minus_one", "three"], ["target"], axis=0),
                 node("Reshape", ["X", "target"], ["R"]), node("MatMul", ["R", "W"], ["Y"])]
        weights = [int64("zero", 0), int64("four", 4), int64("axes", [0]),
                   int64("minus_one", [-1]), int64("three", [3]), weight("W", (3, 5))]
        report = onnxflops.count(model(nodes, {"X": ["batch", "seq", 12]}, weights),
                                 symbolic=True)
        assert report.nodes[-2].output_shapes == [["4*batch", "seq", 3]]
        assert report.total.macs == 4 * batch * seq * 3 * 5
        assert report.constant_nodes == 5  # the shape arithmetic, as when the dims are bound

    def test_a_reshape_to_a_length_bounded_by_a_table_keeps_the_element_count(self):
        # GPT-Neo: [batch, seq, 4, 3] → Reshape([batch, min(2048, seq), 12]) → MatMul by [12, 5]:
        # the element count is kept, so the middle dim is batch·seq·12 / (batch·12) = seq
        nodes = [node("Shape", ["X"], ["s"]), node("Gather", ["s", "zero"], ["b"], axis=0),
                 node("Gather", ["s", "one"], ["n"], axis=0), node("Min", ["n", "bound"], ["m"]),
                 node("Unsqueeze", ["b", "axes"], ["bu"]), node("Unsqueeze", ["m", "axes"], ["mu"]),
                 node("Concat", ["bu", "mu", "twelve"], ["target"], axis=0),
                 node("Reshape", ["X", "target"], ["R"]), node("MatMul", ["R", "W"], ["Y"])]
        weights = [int64("zero", 0), int64("one", 1), int64("bound", 2048), int64("axes", [0]),
                   int64("twelve", [12]), weight("W", (12, 5))]
        report = onnxflops.count(model(nodes, {"X": ["batch", "seq", 4, 3]}, weights),
                                 symbolic=True)
        assert report.nodes[-2].output_shapes == [["batch", "seq", 12]]
        assert report.total.macs == batch * seq * 12 * 5

    @pytest.mark.parametrize("cast", ["Cast", "CastLike"])
    def test_position_embeddings_looked_up_by_a_range_over_seq(self, cast):
        # x = tokens[ids] + positions[range(seq)], the range's bounds cast from float constants
        # (torch.arange(seq) as the dynamo exporter writes it, with CastLike).
        casts = {"Cast": lambda x, y: node("Cast", [x], [y], to=TensorProto.INT64),
                 "CastLike": lambda x, y: node("CastLike", [x, "n"], [y])}[cast]
        nodes = [node("Gather", ["tokens", "ids"], ["t"]),
                 node("Shape", ["ids"], ["s"], start=1, end=2), node("Squeeze", ["s"], ["n"]),
                 casts("zero", "start"), casts("one", "step"),
                 node("Range", ["start", "n", "step"], ["positions_used"]),
                 node("Gather", ["positions", "positions_used"], ["p"]),
                 node("Add", ["t", "p"], ["x"])]
        weights = [weight("tokens", (100, 8)), weight("positions", (64, 8)),
                   weight("zero", (), value=0.0), weight("one", (), value=1.0)]
        ids = model(nodes, {"ids": ["batch", "seq"]}, weights, input_type=TensorProto.INT64)
        report = assert_agrees_with_bound_counts(
            ids, lambda batch, seq: {"ids": (batch, seq)},
            [dict(batch=1, seq=1), dict(batch=4, seq=33)])
        assert report.total.flops == 8 * batch * seq
        # The token table's gradient is scatter-added from the rows looked up; the positions' sums
        # dY over the batch (their lookup reads no data: it is constant work, like the range).
        assert report.total.backward_flops == 8 * batch * seq + (8 * batch * seq - 8 * seq)
        assert report.constant_nodes == 6

    @pytest.mark.parametrize("constant_node", [False, True])
    def test_a_reduction_whose_axes_are_computed(self, constant_node):
        """Opset 18's ReduceMean reads its axes from an input that ONNX inference does not
        evaluate (RMSNorm's mean of squares, as torch exports it); the heads' Reshape after it
        needs its shape in the same round of shape arithmetic."""
        last = int64("last", -1)
        nodes = [node("Constant", [], ["last"], value=last)] if constant_node else []
        nodes += [node("Reshape", ["last", "one"], ["axes"]),
                 node("ReduceMean", ["X", "axes"], ["mean"], keepdims=1),
                 node("Mul", ["X", "mean"], ["normed"]),
                 node("Shape", ["X"], ["batch"], end=1),
                 node("Concat", ["batch", "heads"], ["shape"], axis=0),
                 node("Reshape", ["normed", "shape"], ["Y"])]
        report = onnxflops.count(model(nodes, {"X": ["batch", "seq", 64]},
                                       [int64("one", [1]), int64("heads", [-1, 4, 16]),
                                        *([] if constant_node else [last])],
                                       opset=18), symbolic=True)
        assert not report.uncosted
        assert report.total.flops == 64 * batch * seq + 64 * batch * seq
        assert report.nodes[-1].output_shapes == [["batch", "seq", 4, 16]]

    def test_an_expand_to_a_shape_equal_to_its_own_formula(self):
        """A causal mask over seq + 1 keys expanded to [batch, seq + 1], that shape computed
        from the inputs' shapes: equal formulas broadcast to themselves."""
        nodes = [node("Concat", ["X", "new"], ["keys"], axis=1),
                 node("Shape", ["X"], ["dims"]),
                 node("Gather", ["dims", "zero"], ["batch"]),
                 node("Gather", ["dims", "one"], ["seq"]),
                 node("Add", ["seq", "one"], ["seq_1"]),
                 node("Concat", ["batch", "seq_1"], ["shape"], axis=0),
                 node("Expand", ["keys", "shape"], ["mask"]),
                 node("Relu", ["mask"], ["Y"])]
        report = onnxflops.count(model(nodes, {"X": ["batch", "seq"], "new": ["batch", 1]},
                                       [int64("zero", [0]), int64("one", [1])]), symbolic=True)
        assert not report.uncosted
        relu = next(n for n in report.nodes if n.op_type == "Relu")
        assert relu.flops == batch * (seq + 1)

    def test_a_data_dependent_shape_is_uncosted_with_the_reason(self):
        nodes = [node("NonZero", ["X"], ["idx"]), node("Cast", ["idx"], ["f"], to=1),
                 node("MatMul", ["f", "W"], ["Y"])]
        report = onnxflops.count(model(nodes, {"X": ["batch", 4]}, [weight("W", (1, 3))]),
                                 symbolic=True)
        reasons = {u.op_type: u.reason for u in report.uncosted}
        assert reasons["MatMul"].startswith("shape of 'f' is unknown (2x")

    def test_cli_prints_formulas_and_json_carries_them_as_strings(self, tmp_path):
        path = tmp_path / "dense.onnx"
        onnx.save(dense({"X": ["batch", "seq", 64]}), path)
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["count", str(path), "--symbolic", "--json"]) == 0
        document = json.loads(out.getvalue())
        assert document["inputs"] == {"X": ["batch", "seq", 64]}
        assert document["total"]["flops"] == "4128*batch*seq"          # (2·64 + 1)·32 per row
        assert document["total"]["params"] == 64 * 32 + 32
        assert document["nodes"][0]["output_shapes"] == [["batch", "seq", 32]]

    @pytest.mark.parametrize("start, end, step", [(0, INT64_END, 2), (1, 7, 3), (-1, -8, -1),
                                                  (5, 0, -2), (INT64_END, -INT64_END, -3)])
    def test_a_stepped_slice_with_computed_bounds_keeps_its_other_dims(self, start, end, step):
        # gpt-oss's experts take gate_up[..., ::2]: the bounds pass through Cast and Reshape, so
        # only this stage sees their values. The kept length is onnx's reference evaluator's.
        bounds = [("starts", start), ("ends", end), ("axes", 1), ("steps", step)]
        nodes = [n for name, value in bounds for n in (
            node("Cast", [f"{name}_raw"], [f"{name}_cast"], to=TensorProto.INT64),
            node("Reshape", [f"{name}_cast", "flat"], [name]))]
        nodes += [node("Slice", ["X", "starts", "ends", "axes", "steps"], ["Y"]),
                  node("Relu", ["Y"], ["Z"])]
        weights = [int64(f"{name}_raw", value) for name, value in bounds] + [int64("flat", [-1])]
        proto = model(nodes, {"X": ["batch", 7]}, weights)
        concrete = onnx.reference.ReferenceEvaluator(proto).run(
            None, {"X": np.zeros((3, 7), np.float32)})[0]
        report = onnxflops.count(proto, symbolic=True)
        assert not report.uncosted
        assert report.nodes[-1].output_shapes == [["batch", concrete.shape[1]]]
        assert report.total.flops == batch * concrete.shape[1]  # Relu: 1 per element


    def test_a_table_sliced_to_the_sequence_meets_the_sequence_in_a_broadcast(self):
        # GPT-Neo slices its causal mask from a 2048-position table up to min(seq, 2048), as
        # torch's sym_min writes it: [Min(2048, seq), 8] beside scores of seq. The Add runs
        # only where the two are equal (seq ≤ 2048): seq, not unknown.
        nodes = [node("Shape", ["X"], ["shape"]),
                 node("Gather", ["shape", "one"], ["length"], axis=0),
                 node("Min", ["length", "positions"], ["end"]),
                 node("Slice", ["table", "zero", "end", "zero"], ["rows"]),
                 node("Add", ["X", "rows"], ["Y"]), node("Relu", ["Y"], ["Z"])]
        weights = [weight("table", (2048, 8)), int64("one", [1]), int64("zero", [0]),
                   int64("positions", [2048])]
        report = onnxflops.count(model(nodes, {"X": ["batch", "seq", 8]}, weights),
                                 symbolic=True)
        assert not report.uncosted
        assert report.nodes[-1].output_shapes == [["batch", "seq", 8]]
        # the Add and the Relu: one FLOP per element each, 8 × batch × seq elements
        assert report.total.flops == 2 * 8 * batch * seq


    def test_a_pad_by_a_length_computed_from_the_sequence(self):
        # LFM's short convolution keeps its state as the prompt padded by 7 − seq in front (a
        # negative pad crops): [batch, 4, seq] → [batch, 4, 7] whatever seq; then a depthwise
        # Conv of kernel 7 padded 6 both sides: 7 + 12 − 7 + 1 = 13 positions, 7 MACs each.
        nodes = [node("Shape", ["X"], ["shape"]),
                 node("Gather", ["shape", "two"], ["length"], axis=0),
                 node("Sub", ["seven", "length"], ["front"]),
                 node("Concat", ["zeros", "front", "zeros", "zero"], ["pads"], axis=0),
                 node("Pad", ["X", "pads"], ["state"]),
                 node("Conv", ["state", "W"], ["Y"], group=4, pads=[6, 6], kernel_shape=[7])]
        weights = [weight("W", (4, 1, 7)), int64("two", [2]), int64("seven", [7]),
                   int64("zeros", [0, 0]), int64("zero", [0])]
        report = onnxflops.count(model(nodes, {"X": ["batch", 4, "seq"]}, weights),
                                 symbolic=True)
        assert not report.uncosted
        assert [n.output_shapes for n in report.nodes if n.op_type in ("Pad", "Conv")] == \
            [[["batch", 4, 7]], [["batch", 4, 13]]]
        assert report.total.macs == batch * 4 * 13 * 7


    def test_the_last_seq_positions_sliced_by_a_negated_length_are_seq(self):
        # LFM3's short convolution over the prompt: a depthwise Conv of kernel 7 padded 6 both
        # sides gives seq + 6 positions, cut to the first seq, then x[-seq:] (a start of −seq,
        # computed by Neg): seq positions, not seq − (−seq) = 2·seq; the gate's Mul then meets
        # the prompt's seq, 4 · seq · batch elements, one FLOP each
        nodes = [node("Shape", ["X"], ["shape"]),
                 node("Gather", ["shape", "two"], ["length"], axis=0),
                 node("Neg", ["length"], ["back"]),
                 node("Conv", ["X", "W"], ["C"], group=4, pads=[6, 6], kernel_shape=[7]),
                 node("Slice", ["C", "zero", "length", "two"], ["first"]),
                 node("Slice", ["first", "back", "to_end", "two"], ["last"]),
                 node("Mul", ["X", "last"], ["Y"])]
        weights = [weight("W", (4, 1, 7)), int64("two", [2]), int64("zero", [0]),
                   int64("to_end", [INT64_END])]
        report = onnxflops.count(model(nodes, {"X": ["batch", 4, "seq"]}, weights),
                                 symbolic=True)
        assert not report.uncosted
        assert report.nodes[-1].output_shapes == [["batch", 4, "seq"]]
        assert report.nodes[-1].flops == 4 * batch * seq


    def test_an_einsum_over_a_symbolic_batch_broadcasting_a_one(self):
        # Mamba2's state update: "bhpn,bhn->bhp" with the second operand's batch 1 broadcast:
        # max(1, batch) asked sympy whether batch > 1. MACs = batch · 4 · 8 · 16
        nodes = [node("Einsum", ["A", "B"], ["Y"], equation="bhpn,bhn->bhp")]
        proto = model(nodes, {"A": ["batch", 4, 8, 16], "B": [1, 4, 16]}, [])
        report = onnxflops.count(proto, symbolic=True)
        assert not report.uncosted
        assert report.total.macs == batch * 4 * 8 * 16


    def test_a_bias_sliced_to_the_last_positions_meets_the_sequence_in_a_broadcast(self):
        # MPT's ALiBi bias: a 2048-position row sliced to its last seq, written
        # 2048 − Max(0, 2048 − seq) (= min(seq, 2048)), added to scores of seq × seq
        nodes = [node("Shape", ["X"], ["shape"]),
                 node("Gather", ["shape", "two"], ["length"], axis=0),
                 node("Sub", ["positions", "length"], ["over"]),
                 node("Max", ["over", "zero"], ["start"]),
                 node("Slice", ["bias", "start", "to_end", "one"], ["kept"]),
                 node("Add", ["X", "kept"], ["Y"])]
        weights = [weight("bias", (4, 2048)), int64("one", [1]), int64("two", [2]),
                   int64("zero", [0]), int64("positions", [2048]), int64("to_end", [INT64_END])]
        report = onnxflops.count(model(nodes, {"X": ["batch", 4, "seq"]}, weights),
                                 symbolic=True)
        assert not report.uncosted
        assert report.nodes[-1].output_shapes == [["batch", 4, "seq"]]
        assert report.total.flops == 4 * batch * seq  # the Add, one FLOP per element


    def test_a_bounded_dim_is_the_free_one_only_where_they_agree_up_to_the_bound(self):
        from onnxflops.analysis.symbolic import _broadcast_dim

        context = sympy.Symbol("context", integer=True, positive=True)
        # MPT's decode step: the bias's last context + 1 positions of 2048
        assert _broadcast_dim(2048 - sympy.Max(0, 2047 - context), context + 1) == context + 1
        assert _broadcast_dim(context, sympy.Min(2048, context)) == context
        # equal nowhere below the bound (2·seq vs min(2048, seq)): not one dim
        assert _broadcast_dim(sympy.Min(2048, seq), 2 * seq) is None
        assert _broadcast_dim(seq, height) is None


class TestAgreesWithBoundCounts:
    def test_a_small_cnn_over_symbolic_spatial_dims(self):
        nodes = [node("Conv", ["X", "W1", "B1"], ["C1"], strides=[2, 2], pads=[1, 1, 1, 1]),
                 node("Relu", ["C1"], ["R1"]),
                 node("MaxPool", ["R1"], ["P"], kernel_shape=[3, 3], strides=[2, 2],
                      pads=[1, 1, 1, 1]),
                 node("Conv", ["P", "W2"], ["C2"], auto_pad="SAME_UPPER"),
                 node("AveragePool", ["C2"], ["A"], kernel_shape=[2, 2], strides=[2, 2],
                      ceil_mode=1),
                 node("GlobalAveragePool", ["A"], ["G"]), node("Flatten", ["G"], ["F"]),
                 node("Gemm", ["F", "Wf", "Bf"], ["Y"], transB=1)]
        weights = [weight("W1", (8, 3, 3, 3)), weight("B1", (8,)), weight("W2", (4, 8, 3, 3)),
                   weight("Wf", (10, 4)), weight("Bf", (10,))]
        cnn = model(nodes, {"X": ["batch", 3, "height", "width"]}, weights)
        report = assert_agrees_with_bound_counts(
            cnn, lambda batch, height, width: {"X": (batch, 3, height, width)},
            [dict(batch=1, height=32, width=32), dict(batch=2, height=17, width=40),
             dict(batch=3, height=9, width=10)])
        assert report.total.macs.free_symbols == {batch, height, width}

    def test_a_sliding_window_step_written_two_ways_agrees_at_every_context(self):
        # A decode step with a window of 3 cached keys: the cache's slice keeps the last 3
        # (Min(3, context)), the mask's arithmetic writes context − Max(0, context − 3). Both
        # meet in one Add; the step's work stops growing once the window is full.
        nodes = [node("Slice", ["past", "minus_three", "to_end", "axis_1"], ["kept"]),
                 node("Concat", ["kept", "new"], ["keys"], axis=1),
                 node("Transpose", ["keys"], ["keys_t"], perm=[0, 2, 1]),
                 node("MatMul", ["q", "keys_t"], ["scores"]),
                 node("Shape", ["past"], ["past_shape"]),
                 node("Gather", ["past_shape", "one"], ["context"], axis=0),
                 node("Sub", ["context", "three"], ["beyond"]),
                 node("Max", ["beyond", "zero"], ["dropped"]),
                 node("Sub", ["context", "dropped"], ["held"]),
                 node("Add", ["held", "one"], ["length"]),
                 node("Concat", ["ones", "length"], ["mask_shape"], axis=0),
                 node("ConstantOfShape", ["mask_shape"], ["mask"],
                      value=onnx.helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
                 node("Add", ["scores", "mask"], ["masked"]),
                 node("Softmax", ["masked"], ["p"], axis=-1),
                 node("MatMul", ["p", "keys"], ["Y"])]
        weights = [int64("minus_three", [-3]), int64("to_end", [INT64_END]),
                   int64("axis_1", [1]), int64("one", [1]), int64("three", [3]),
                   int64("zero", [0]), int64("ones", [1, 1])]
        step = model(nodes, {"past": [1, "context", 4], "new": [1, 1, 4], "q": [1, 1, 4]},
                     weights)
        report = assert_agrees_with_bound_counts(
            step, lambda context: {"past": (1, context, 4), "new": (1, 1, 4), "q": (1, 1, 4)},
            [dict(context=1), dict(context=2), dict(context=3), dict(context=4),
             dict(context=50)])
        context = sympy.Symbol("context", integer=True, positive=True)
        # q·kᵀ and p·v over min(context, 3) + 1 keys of 4 dims: 8 MACs a key.
        assert [report.total.macs.subs(context, c) for c in (1, 2, 3, 4, 50)] == \
            [16, 24, 32, 32, 32]
