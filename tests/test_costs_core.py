"""Per-op costs against formulas derived by hand for tiny graphs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxflops
from helpers import model, node, weight


def single(op_node, inputs, weights=(), opset=17, convention="default", **kw):
    report = onnxflops.count(model([op_node], inputs, weights, opset=opset, **kw),
                             convention=convention)
    assert not report.uncosted, report.uncosted
    (entry,) = report.nodes
    return entry


class TestContractions:
    def test_grouped_dilated_strided_conv_with_bias(self):
        n, c, h, w, m, g, k = 2, 8, 15, 15, 12, 4, 3
        conv = node("Conv", ["x", "w", "b"], ["y"], group=g, dilations=[2, 2], strides=[2, 2],
                    pads=[2, 2, 2, 2])
        e = single(conv, {"x": [n, c, h, w]}, [weight("w", (m, c // g, k, k)), weight("b", (m,))])
        out = (h + 4 - 2 * (k - 1) - 1) // 2 + 1  # 8
        assert e.output_shapes == [[n, m, out, out]]
        assert e.macs == n * m * out * out * (c // g) * k * k
        assert e.flops == 2 * e.macs + n * m * out * out
        assert e.params == m * (c // g) * k * k + m

    def test_conv_transpose(self):
        n, c, h, m, k = 1, 4, 5, 6, 3
        op = node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])
        e = single(op, {"x": [n, c, h, h]}, [weight("w", (c, m, k, k))])
        assert e.output_shapes == [[n, m, 11, 11]]
        assert e.macs == n * c * h * h * m * k * k

    def test_gemm_transposed_scaled(self):
        op = node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.5, beta=2.0)
        e = single(op, {"a": [7, 3]}, [weight("b", (5, 7)), weight("c", (5,))])
        m, k, n = 3, 7, 5
        assert e.macs == m * n * k
        # 2·MACs, alpha·(AB) per output, + C per output, beta·C once per C element
        assert e.flops == 2 * m * n * k + m * n + m * n + n

    def test_batched_matmul_with_broadcast(self):
        op = node("MatMul", ["a", "b"], ["y"])
        e = single(op, {"a": [2, 1, 4, 6], "b": [3, 6, 5]})
        assert e.output_shapes == [[2, 3, 4, 5]]
        assert e.macs == 2 * 3 * 4 * 5 * 6
        exact = single(op, {"a": [2, 1, 4, 6], "b": [3, 6, 5]}, convention="exact")
        assert exact.flops == 2 * 3 * 4 * 5 * (2 * 6 - 1)

    def test_matmul_vector(self):
        e = single(node("MatMul", ["a", "b"], ["y"]), {"a": [6], "b": [6, 4]})
        assert e.macs == 6 * 4

    def test_einsum_attention_scores(self):
        op = node("Einsum", ["q", "k"], ["s"], equation="bhqd,bhkd->bhqk")
        e = single(op, {"q": [2, 3, 5, 8], "k": [2, 3, 7, 8]}, opset=17)
        assert e.macs == 2 * 3 * 5 * 7 * 8

    def test_einsum_ellipsis_batch_dims(self):
        # '...' stands for the dims beyond the letters, (2, 3) in each (ONNX wants as many in each
        # operand that has one).
        op = node("Einsum", ["a", "b"], ["y"], equation="...ij,...jk->...ik")
        e = single(op, {"a": [2, 3, 4, 5], "b": [2, 3, 5, 6]}, opset=17)
        assert e.output_shapes == [[2, 3, 4, 6]]
        assert e.macs == 2 * 3 * 4 * 6 * 5

    def test_einsum_ellipsis_broadcasts_a_one(self):
        # A's 1 broadcasts against B's 7 and B's 1 against A's 2: all 2·7 products are computed.
        op = node("Einsum", ["a", "b"], ["y"], equation="...si,...id->...sd")
        e = single(op, {"a": [2, 1, 4, 5], "b": [1, 7, 5, 6]}, opset=17)
        assert e.output_shapes == [[2, 7, 4, 6]]
        assert e.macs == 2 * 7 * 4 * 6 * 5

    def test_einsum_implicit_output_sums_repeated_letters(self):
        # No '->': the output is the letters that occur once, sorted (ik); j is summed.
        op = node("Einsum", ["a", "b"], ["y"], equation="ij,jk")
        e = single(op, {"a": [3, 4], "b": [4, 5]}, opset=17)
        assert e.output_shapes == [[3, 5]]
        assert e.macs == 3 * 5 * 4

    def test_einsum_implicit_output_keeps_ellipsis_dims_first(self):
        op = node("Einsum", ["a", "b"], ["y"], equation="...ij,jk")
        e = single(op, {"a": [2, 3, 4], "b": [4, 5]}, opset=17)
        assert e.output_shapes == [[2, 3, 5]]
        assert e.macs == 2 * 3 * 5 * 4

    def test_einsum_ellipsis_reduction_of_one_operand(self):
        # '...ij->...i' sums j: numel(A) − numel(Y) additions.
        op = node("Einsum", ["a"], ["y"], equation="...ij->...i")
        e = single(op, {"a": [2, 3, 4]}, opset=17)
        assert e.flops == 2 * 3 * 4 - 2 * 3

    def test_einsum_of_an_outer_product_multiplies_and_accumulates_nothing(self):
        # XLNet's "i,d->id" of positions and frequencies sums no index: i·d products alone (torch
        # runs it as a broadcast mul, FlopCounterMode counts no MAC); "bi,bj->bij" too.
        op = node("Einsum", ["p", "f"], ["y"], equation="i,d->id")
        e = single(op, {"p": [16], "f": [32]}, opset=17)
        assert (e.macs, e.flops) == (0, 16 * 32)
        batched = single(node("Einsum", ["a", "b"], ["y"], equation="bi,bj->bij"),
                         {"a": [2, 3], "b": [2, 4]}, opset=17)
        assert (batched.macs, batched.flops) == (0, 2 * 3 * 4)

    def test_macs_convention_keeps_only_contractions(self):
        op = node("Gemm", ["a", "b", "c"], ["y"])
        e = single(op, {"a": [4, 3]}, [weight("b", (3, 2)), weight("c", (2,))],
                   convention="macs")
        assert e.flops == 2 * 4 * 2 * 3


class TestElementwiseAndActivations:
    def test_broadcast_add_counts_output_elements(self):
        e = single(node("Add", ["a", "b"], ["y"]), {"a": [4, 1, 5], "b": [3, 1]})
        assert e.flops == 4 * 3 * 5

    def test_sum_of_three(self):
        e = single(node("Sum", ["a", "b", "c"], ["y"]), {"a": [6], "b": [6], "c": [6]})
        assert e.flops == 2 * 6

    def test_integer_arithmetic_is_int_ops(self):
        op = node("Mul", ["a", "b"], ["y"])
        e = single(op, {"a": [10], "b": [10]}, input_type=TensorProto.INT32)
        assert (e.flops, e.int_ops) == (0, 10)

    def test_relu_sigmoid_tanh_one_per_element(self):
        for op in ("Relu", "Sigmoid", "Tanh"):
            assert single(node(op, ["x"], ["y"]), {"x": [3, 7]}).flops == 21

    def test_gelu_is_its_erf_chain(self):
        # x/√2, erf, +1, ·x, ·0.5: five operations per element (√2 is folded)
        assert single(node("Gelu", ["x"], ["y"]), {"x": [4, 10]}, opset=20).flops == 5 * 40

    def test_hardswish_is_its_expansion(self):
        # HardSigmoid = max(0, min(1, αx + β)): 4 per element, then x·that: 1
        assert single(node("HardSwish", ["x"], ["y"]), {"x": [2, 6]}, opset=22).flops == 5 * 12

    def test_softmax(self):
        n, m = 4 * 10, 4  # softmax over rows of 10
        e = single(node("Softmax", ["x"], ["y"], axis=-1), {"x": [4, 10]}, opset=13)
        # ReduceMax n − m, Sub n, Exp n, ReduceSum n − m, Div n
        assert e.flops == 5 * n - 2 * m


class TestNormalizationPoolingReduction:
    def test_layer_normalization_is_its_expansion(self):
        rows, s = 2 * 3, 8
        op = node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)
        e = single(op, {"x": [2, 3, s]}, [weight("g", (s,)), weight("b", (s,))])
        # mean S, x² S, mean of x² S, x − mean S, ÷ σ S, ·γ S, +β S; per row: mean², var,
        # + eps, sqrt, 1/σ
        assert e.flops == rows * (7 * s + 5)
        assert e.params == 2 * s

    def test_batch_normalization(self):
        op = node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
        e = single(op, {"x": [2, 3, 4, 4]}, [weight(k, (3,)) for k in "sbmv"])
        assert e.flops == 4 * 2 * 3 * 4 * 4 + 2 * 3
        assert (e.params, e.buffers) == (6, 6)

    def test_max_and_average_pool(self):
        mp = single(node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2]),
                    {"x": [1, 2, 9, 9]})
        assert mp.output_shapes == [[1, 2, 4, 4]]
        assert mp.flops == (9 - 1) * 32
        ap = single(node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
                    {"x": [1, 2, 8, 8]})
        assert ap.flops == 4 * 32

    def test_global_average_pool(self):
        e = single(node("GlobalAveragePool", ["x"], ["y"]), {"x": [2, 5, 7, 7]})
        assert e.flops == 2 * 5 * (48 + 1)

    def test_reduce_sum_and_mean(self):
        axes = weight("axes", None, dtype=np.int64, value=[1])
        e = single(node("ReduceSum", ["x", "axes"], ["y"]), {"x": [4, 6]}, [axes], opset=18)
        assert e.flops == 4 * 5
        e = single(node("ReduceMean", ["x", "axes"], ["y"]), {"x": [4, 6]}, [axes], opset=18)
        assert e.flops == 4 * 6


class TestRecurrent:
    def test_gru_with_bias(self):
        seq, batch, i, h = 5, 2, 7, 4
        op = node("GRU", ["x", "w", "r", "b"], ["y"], hidden_size=h)
        e = single(op, {"x": [seq, batch, i]},
                   [weight("w", (1, 3 * h, i)), weight("r", (1, 3 * h, h)),
                    weight("b", (1, 6 * h))])
        assert e.macs == seq * batch * 3 * h * (i + h)
        assert e.flops == 2 * e.macs + seq * batch * h * (11 + 6)
        assert e.params == 3 * h * i + 3 * h * h + 6 * h

    def test_bidirectional_lstm(self):
        seq, batch, i, h = 3, 2, 5, 6
        op = node("LSTM", ["x", "w", "r"], ["y"], hidden_size=h, direction="bidirectional")
        e = single(op, {"x": [seq, batch, i]},
                   [weight("w", (2, 4 * h, i)), weight("r", (2, 4 * h, h))])
        assert e.macs == 2 * seq * batch * 4 * h * (i + h)
        assert e.flops == 2 * e.macs + 2 * seq * batch * h * 13

    def test_rnn_batch_first_layout(self):
        op = node("RNN", ["x", "w", "r"], ["y"], hidden_size=3, layout=1)
        e = single(op, {"x": [2, 9, 4]}, [weight("w", (1, 3, 4)), weight("r", (1, 3, 3))],
                   opset=14)
        assert e.macs == 9 * 2 * 3 * (4 + 3)


def loop_model(trips: int):
    """Loop of `trips` iterations whose body multiplies a [4, 8] state by an [8, 8] weight."""
    body = helper.make_graph(
        [node("MatMul", ["h_in", "w"], ["h_out"]), node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [4, 8])])
    loop = node("Loop", ["M", "cond", "h0"], ["h"], body=body)
    weights = [weight("M", (), dtype=np.int64, value=trips),
               weight("cond", (), dtype=np.bool_, value=True), weight("w", (8, 8))]
    return model([loop], {"h0": [4, 8]}, weights)


def tap_loop_model(lengths: list[int]):
    """TorchScript's interpolation by taps: trip i gathers the rows offsets[i]:offsets[i+1] of a
    [rows, 4] table, weighs them and sums them, so its shapes follow the trip number. Its
    condition is the outer `True` cast to bool again in every trip, as TorchScript's loops do."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rows = int(offsets[-1])

    def constant(name, values):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(
            name, TensorProto.INT64, [len(values)], values))

    body = helper.make_graph(
        [constant("zero", [0]), constant("one", [1]),
         node("Unsqueeze", ["i", "zero"], ["at"]), node("Add", ["at", "one"], ["after"]),
         node("Slice", ["offsets", "at", "after", "zero"], ["start"]),
         node("Add", ["after", "one"], ["beyond"]),
         node("Slice", ["offsets", "after", "beyond", "zero"], ["end"]),
         node("Slice", ["positions", "start", "end", "zero"], ["picked"]),
         node("Gather", ["table", "picked"], ["rows"], axis=0),
         node("Slice", ["taps", "start", "end", "zero"], ["tap"]),
         node("Unsqueeze", ["tap", "one"], ["weights"]),
         node("Mul", ["rows", "weights"], ["weighted"]),
         node("ReduceSum", ["weighted", "zero"], ["tap_sum"], keepdims=0),
         node("Cast", ["flag"], ["cond_out"], to=TensorProto.BOOL)],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("tap_sum", TensorProto.FLOAT, None)])
    loop = node("Loop", ["M", "flag"], ["sums"], body=body)
    return model([loop, node("Add", ["sums", "x"], ["y"])], {"x": [1, 1]},
                 [weight("table", (rows, 4)), weight("taps", (rows,)),
                  weight("positions", (rows,), dtype=np.int64, value=np.arange(rows)),
                  weight("offsets", offsets.shape, dtype=np.int64, value=offsets),
                  weight("flag", (), dtype=np.bool_, value=True),
                  weight("M", (), dtype=np.int64, value=len(lengths))], outputs=["y"])


class TestControlFlow:
    def test_loop_costs_body_times_trip_count(self):
        report = onnxflops.count(loop_model(6))
        (entry,) = report.nodes
        assert entry.macs == 6 * 4 * 8 * 8
        assert entry.params == 64  # the weight read inside the body, counted once
        assert entry.detail == {"trip_count": 6}

    def test_loop_whose_shapes_follow_its_trip_number_is_costed_trip_by_trip(self):
        # Lengths 1, 2, 3: Mul (1+2+3)·4 = 24 FLOPs, ReduceSum (0+1+2)·4 = 12
        report = onnxflops.count(tap_loop_model([1, 2, 3]), training=True)
        assert not report.uncosted, report.uncosted
        loop_entry, added = report.nodes
        assert loop_entry.flops == 24 + 12
        assert loop_entry.detail == {"trip_count": 3, "costed_per_trip": True}
        assert added.output_shapes == [[3, 4]]  # the trips stacked: the condition stays true

    def test_a_loop_costed_trip_by_trip_has_a_bound_on_its_trips(self):
        from onnxflops.costs.control_flow import MAX_TRIPS_APART

        report = onnxflops.count(tap_loop_model([1] * (MAX_TRIPS_APART + 1)))
        [loop_entry] = [u for u in report.uncosted if u.op_type == "Loop"]
        assert "shape of 'weighted' is unknown" in loop_entry.reason

    def test_if_takes_the_more_expensive_branch(self):
        cheap = helper.make_graph([node("Relu", ["x"], ["a"])], "then", [],
                                  [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 5])])
        costly = helper.make_graph([node("MatMul", ["x", "w"], ["b"])], "else", [],
                                   [helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, 5])])
        op = node("If", ["c"], ["y"], then_branch=cheap, else_branch=costly)
        m = model([node("Greater", ["s", "t"], ["c"]), op], {"x": [3, 5], "s": [], "t": []},
                  [weight("w", (5, 5))])
        entry = onnxflops.count(m).nodes[-1]
        assert entry.macs == 3 * 5 * 5
        assert entry.detail["then_branch"]["flops"] == 15
        assert entry.detail["else_branch"]["macs"] == 75

    @staticmethod
    def _if_on_size(size: int, then_nodes, else_nodes, weights):
        """y = If(Size(x) == 4), x a float vector of `size` elements: the condition is known
        once x is bound, as in the expanded AffineGrid (`Size(size) == 4`)."""
        then = helper.make_graph(then_nodes, "then", [],
                                 [helper.make_value_info(then_nodes[-1].output[0], onnx.TypeProto())])
        other = helper.make_graph(else_nodes, "else", [],
                                  [helper.make_value_info(else_nodes[-1].output[0], onnx.TypeProto())])
        nodes = [node("Size", ["x"], ["n"]),
                 node("Constant", [], ["four"], value=helper.make_tensor("", TensorProto.INT64, [], [4])),
                 node("Equal", ["n", "four"], ["c"]),
                 node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
        return model(nodes, {"x": [size]}, weights)

    def test_if_of_a_known_condition_costs_the_branch_taken(self):
        # x has 5 elements, so the else branch runs: x·W, W 5×3, 15 MACs. The then branch, a
        # 5×100 product (500 MACs, the costlier), cannot run.
        m = self._if_on_size(5, [node("MatMul", ["x", "wide"], ["t"])],
                             [node("MatMul", ["x", "w"], ["e"])],
                             [weight("wide", (5, 100)), weight("w", (5, 3))])
        report = onnxflops.count(m)
        assert report.total.macs == 15
        assert report.nodes[-1].detail == {"branch": "else_branch"}

    def test_if_of_a_known_condition_never_refuses_the_branch_that_cannot_run(self):
        # The then branch splits x into parts of 4 and Size(x) − 4 (−1 for 5 elements) and
        # reshapes it to 2×2: impossible for 5 elements, so it cannot run; the else branch, x·W
        # (W 5×3, 15 MACs), does.
        then = [node("Constant", [], ["parts"],
                     value=helper.make_tensor("", TensorProto.INT64, [2], [4, -1])),
                node("Split", ["x", "parts"], ["p", "q"]),
                node("Reshape", ["x", "square"], ["t"])]
        m = self._if_on_size(5, then, [node("MatMul", ["x", "w"], ["e"])],
                             [weight("w", (5, 3)),
                              weight("square", None, np.int64, [2, 2])])
        assert onnxflops.count(m).total.macs == 15

    def test_scan_costs_body_times_sequence_length(self):
        body = helper.make_graph(
            [node("Add", ["s_in", "x_t"], ["s_out"]), node("Identity", ["s_out"], ["y_t"])],
            "body",
            [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [6]),
             helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [6])],
            [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [6]),
             helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [6])])
        op = node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1)
        entry = single(op, {"s0": [6], "xs": [10, 6]}, outputs=["s", "ys"])
        assert entry.flops == 10 * 6


class TestWeightsAndConstants:
    def test_shared_initializer_counted_once(self):
        nodes = [node("MatMul", ["x", "w"], ["a"]), node("MatMul", ["a", "w"], ["y"])]
        report = onnxflops.count(model(nodes, {"x": [2, 4]}, [weight("w", (4, 4))]))
        assert report.total.params == 16
        assert report.total.macs == 2 * 2 * 4 * 4

    def test_weights_assembled_at_run_time_count_their_sources(self):
        # W = Concat(W1, W2)ᵀ: the assembly is constant work, W1 and W2 are the params
        nodes = [node("Concat", ["w1", "w2"], ["wc"], axis=0),
                 node("Transpose", ["wc"], ["wt"]), node("MatMul", ["x", "wt"], ["y"])]
        report = onnxflops.count(model(nodes, {"x": [3, 5]}, [weight("w1", (2, 5)),
                                                              weight("w2", (4, 5))]))
        assert report.total.params == 30
        assert report.total.macs == 3 * 5 * 6
        assert report.constant_nodes == 2

    def test_shape_arithmetic_after_binding_is_constant_work(self):
        nodes = [node("Shape", ["x"], ["s"]),
                 node("Gather", ["s", "zero"], ["n"], axis=0),
                 node("Unsqueeze", ["n", "axes"], ["n1"]),
                 node("Concat", ["n1", "minus_one"], ["target"], axis=0),
                 node("Reshape", ["x", "target"], ["flat"]),
                 node("MatMul", ["flat", "w"], ["y"])]
        weights = [weight("zero", (), dtype=np.int64, value=0),
                   weight("axes", None, dtype=np.int64, value=[0]),
                   weight("minus_one", None, dtype=np.int64, value=[-1]),
                   weight("w", (12, 2))]
        report = onnxflops.count(model(nodes, {"x": ["batch", 3, 4]}, weights), batch=5)
        assert [n.op_type for n in report.nodes] == ["Reshape", "MatMul"]
        assert report.nodes[0].output_shapes == [[5, 12]]
        assert report.total.macs == 5 * 12 * 2
        assert report.constant_nodes == 4

    def test_shape_arithmetic_onnx_inference_cannot_fold_is_evaluated(self):
        # Flatten computed as round(sqrt(prod(dims[1:]))²): data propagation stops at Sqrt.
        nodes = [node("Shape", ["x"], ["s"]), node("Slice", ["s", "one", "big"], ["tail"]),
                 node("ReduceProd", ["tail"], ["p"], keepdims=1), node("Cast", ["p"], ["pf"], to=1),
                 node("Sqrt", ["pf"], ["r"]), node("Mul", ["r", "r"], ["r2"]),
                 node("Cast", ["r2"], ["pi"], to=7),
                 node("Concat", ["minus_one", "pi"], ["target"], axis=0),
                 node("Reshape", ["x", "target"], ["flat"]), node("MatMul", ["flat", "w"], ["y"])]
        weights = [weight("one", None, dtype=np.int64, value=[1]),
                   weight("big", None, dtype=np.int64, value=[100]),
                   weight("minus_one", None, dtype=np.int64, value=[-1]), weight("w", (12, 2))]
        m = model(nodes, {"x": [5, 3, 4]}, weights)
        inferred = onnx.shape_inference.infer_shapes(m, data_prop=True)
        flat = next(v for v in inferred.graph.value_info if v.name == "flat")
        assert not flat.type.tensor_type.shape.dim[1].HasField("dim_value")  # ONNX alone: unknown
        report = onnxflops.count(m)
        assert report.nodes[0].output_shapes == [[5, 12]]
        assert report.total.macs == 5 * 12 * 2

    def test_data_dependent_shape_is_counted_at_its_upper_bound_and_said(self):
        nodes = [node("NonZero", ["x"], ["nz"]), node("Transpose", ["nz"], ["idx"]),
                 node("Cast", ["idx"], ["f"], to=1), node("MatMul", ["f", "w"], ["y"])]
        report = onnxflops.count(model(nodes, {"x": [4, 4]}, [weight("w", (2, 3))]))
        assert not report.uncosted
        # at most all 16 elements nonzero: f is 16×2, the MatMul 16·2·3 MACs
        assert report.total.macs == 16 * 2 * 3
        assert all(n.bound for n in report.nodes)
        assert "4 node(s) counted at an upper bound" in report.warnings[0]

    def test_model_local_functions_are_inlined(self):
        dense = helper.make_function(
            "example.layers", "Dense", ["x", "w", "b"], ["y"],
            [node("MatMul", ["x", "w"], ["xw"]), node("Add", ["xw", "b"], ["y"])],
            [helper.make_opsetid("", 17)])
        call = helper.make_node("Dense", ["x", "w", "b"], ["y"], domain="example.layers",
                                name="dense1")
        m = model([call], {"x": [3, 8]}, [weight("w", (8, 4)), weight("b", (4,))])
        m.functions.append(dense)
        m.opset_import.append(helper.make_opsetid("example.layers", 1))
        report = onnxflops.count(m)
        assert [n.op_type for n in report.nodes] == ["MatMul", "Add"]
        assert report.total.flops == 2 * 3 * 4 * 8 + 3 * 4
        assert report.total.params == 8 * 4 + 4

    def test_op_without_rule_is_reported_uncosted(self):
        op = helper.make_node("Mystery", ["x"], ["y"], domain="example.custom", name="m1")
        m = helper.make_model(
            helper.make_graph([op], "g", [helper.make_tensor_value_info("x", 1, [2])],
                              [helper.make_tensor_value_info("y", 1, [2])]),
            opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("example.custom", 1)])
        report = onnxflops.count(m)
        assert [(u.name, u.op_type) for u in report.uncosted] == [("m1", "Mystery")]
        assert "example.custom::Mystery" in report.uncosted[0].reason
        assert any("Mystery" in w for w in report.warnings)

    def test_missing_external_data_still_counts(self, tmp_path):
        m = model([node("MatMul", ["x", "w"], ["y"])], {"x": [3, 4096]},
                  [weight("w", (4096, 2))])
        path = tmp_path / "big.onnx"
        onnx.save_model(m, str(path), save_as_external_data=True, location="big.data",
                        size_threshold=0)
        (tmp_path / "big.data").unlink()
        report = onnxflops.count(path)
        assert report.total.macs == 3 * 4096 * 2
        assert report.total.params == 4096 * 2


def test_a_class_token_expanded_and_joined_to_the_activations_is_a_parameter():
    """Plain ONNX (no converter record): ViT's token [1,1,8] reaches the activations through
    Expand → Concat; its 8 elements are params beside the 8×4 projection."""
    from onnx import numpy_helper

    nodes = [helper.make_node("Expand", ["token", "batch_shape"], ["tokens"]),
             helper.make_node("Concat", ["tokens", "x"], ["joined"], axis=1),
             helper.make_node("MatMul", ["joined", "w"], ["y"])]
    weights = [numpy_helper.from_array(np.ones((1, 1, 8), np.float32), "token"),
               numpy_helper.from_array(np.array([2, 1, 8], np.int64), "batch_shape"),
               numpy_helper.from_array(np.ones((8, 4), np.float32), "w")]
    graph = helper.make_graph(
        nodes, "vit_head", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4, 4])], weights)
    report = onnxflops.count(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert report.total.params == 8 + 8 * 4
    assert report.total.macs == 2 * 4 * 8 * 4


class TestOldOpsets:
    @pytest.mark.parametrize("batch", [1, 2])
    def test_scan_8_runs_its_body_per_batch_row_and_step(self, batch):
        # Scan-8: sequence_lens left empty, a state [B, 2], scanned x [B, 3, 2]; the body adds
        # each step's row to the state: 2 adds × 3 steps × B rows.
        body = helper.make_graph(
            [node("Add", ["s_in", "x_t"], ["s_out"]), node("Identity", ["s_out"], ["y_t"])],
            "body",
            [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [2]),
             helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2]),
             helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [2])])
        scan = node("Scan", ["", "s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1)
        m = model([scan], {"s0": [batch, 2], "xs": [batch, 3, 2]}, outputs=["s", "ys"], opset=8)
        report = onnxflops.count(m)
        assert report.complete
        assert report.total.flops == 2 * 3 * batch

    def test_prelu_6_whose_later_body_refuses_its_slope_is_uncosted_not_refused(self):
        # PRelu-6 takes a slope per channel (3 for x 2x3x4), which onnxruntime, having no PRelu-6
        # kernel, never runs; ONNX's body (PRelu-16's) broadcasts it as numpy does, which fails.
        m = model([node("PRelu", ["x", "slope"], ["y"])], {"x": [2, 3, 4]},
                  [weight("slope", (3,))], opset=6)
        with pytest.warns(onnxflops.UncostedWarning,
                          match=r"function body of PRelu, by which it is costed, refuses"):
            report = onnxflops.count(m)
        assert not report.complete


def test_a_reduction_of_an_empty_set_does_no_arithmetic():
    # x 2x0x4 summed over axis 1 (keepdims): 8 outputs, each the identity 0, no add.
    graph = helper.make_graph(
        [node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)], "empty",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 0, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight("axes", None, np.int64, [1])])
    report = onnxflops.count(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    assert report.complete
    assert report.nodes[0].output_shapes == [[2, 1, 4]]
    assert report.total.flops == 0
