"""Training FLOPs: the backward pass of each node, derived by hand, and checked for contractions
against torch.utils.flop_counter.FlopCounterMode on loss.backward() of the same torch model."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxflops
from helpers import model, node, weight
from onnxflops.cli import main
from onnxflops.results.tables import SUMMED


def dense(m: int, p: int, n: int, *, x_is_variable: bool = False) -> onnx.ModelProto:
    """y = X·W + b, X [m, p] the model's input (or a variable, as TF1 graphs had it)."""
    nodes = [node("MatMul", ["X", "W"], ["XW"]), node("Add", ["XW", "b"], ["Y"])]
    weights = [weight("W", (p, n)), weight("b", (n,))]
    if x_is_variable:
        weights.append(weight("X", (m, p)))
    return model(nodes, {"X": [m, p]}, weights)


def test_nodes_alike_that_cost_their_function_body_each_get_its_backward():
    # One function body (expanded from the first HardSigmoid, which needs no gradient: it reads
    # the input) serves both: the gradient must enter it through the body's own input names.
    def network(first_on_input: bool) -> onnx.ModelProto:
        nodes = [node("HardSigmoid", ["X"], ["H1"])] if first_on_input else []
        nodes += [node("MatMul", ["H1" if first_on_input else "X", "W1"], ["Z"]),
                  node("HardSigmoid", ["Z"], ["H2"]), node("MatMul", ["H2", "W2"], ["Y"])]
        return model(nodes, {"X": [3, 7]}, [weight("W1", (7, 7)), weight("W2", (7, 2))])

    report = onnxflops.count(network(True), training=True)
    alone = onnxflops.count(network(False), training=True).nodes[1]
    assert not report.uncosted
    assert report.nodes[0].backward_flops == 0
    assert report.nodes[2].backward_flops == alone.backward_flops > 0


def test_comparisons_carry_no_gradient():
    # Clip's body compares, then selects (Where): the selection routes dY, the comparison is free.
    nodes = [node("MatMul", ["X", "W"], ["Z"]), node("Clip", ["Z", "low", "high"], ["Y"])]
    weights = [weight("W", (8, 2)), weight("low", (), value=0.0), weight("high", (), value=6.0)]
    report = onnxflops.count(model(nodes, {"X": [4, 8]}, weights), training=True)
    assert not report.uncosted
    assert report.nodes[1].backward_flops == 0


class TestContractions:
    def test_a_dense_layer_on_the_input_computes_only_its_weight_gradients(self):
        report = onnxflops.count(dense(25, 16, 9), training=True)
        matmul, add = report.nodes
        assert matmul.backward_macs == 25 * 16 * 9                   # dW = Xᵀ·dY, no dX
        assert add.backward_flops == 25 * 9 - 9                      # db: dY summed over the rows
        assert report.total.backward_flops == 2 * 3_600 + 216 == 7_416
        assert report.total.training_flops == 7_425 + 7_416

    def test_a_variable_input_gets_its_gradient_too(self):
        report = onnxflops.count(dense(25, 16, 9, x_is_variable=True), training=True)
        assert report.total.backward_macs == 2 * 25 * 16 * 9         # dX = dY·Wᵀ and dW

    def test_exact_convention_counts_each_gradient_element_as_one_dot_product(self):
        report = onnxflops.count(dense(25, 16, 9), training=True, convention="exact")
        # dW [16, 9]: 144 dot products of length 25 → 144·(2·25 − 1); db as before.
        assert report.total.backward_flops == 144 * 49 + 216

    def test_the_first_conv_needs_no_input_gradient_the_second_does(self):
        nodes = [node("Conv", ["X", "W1", "B1"], ["Y1"], pads=[1, 1, 1, 1]),
                 node("Relu", ["Y1"], ["R1"]),
                 node("Conv", ["R1", "W2"], ["Y2"], pads=[1, 1, 1, 1])]
        weights = [weight("W1", (4, 3, 3, 3)), weight("B1", (4,)), weight("W2", (2, 4, 3, 3))]
        report = onnxflops.count(model(nodes, {"X": [1, 3, 8, 8]}, weights), training=True)
        conv1, relu, conv2 = report.nodes
        macs1, macs2 = 4 * 64 * 27, 2 * 64 * 36
        assert (conv1.macs, conv2.macs) == (macs1, macs2)
        assert conv1.backward_macs == macs1                          # dW only
        assert conv2.backward_macs == 2 * macs2                      # dX and dW
        assert conv1.backward_flops == 2 * macs1 + 4 * 64 - 4        # + dB: Σ dY per channel
        assert relu.backward_flops == 4 * 64                         # one comparison per element

    def test_an_einsum_of_three_operands_is_reported_uncosted_in_backward(self):
        nodes = [node("Einsum", ["X", "A", "B"], ["Y"], equation="ij,jk,kl->il")]
        weights = [weight("A", (4, 5)), weight("B", (5, 6))]
        report = onnxflops.count(model(nodes, {"X": [3, 4]}, weights), training=True)
        assert report.total.macs > 0
        assert [u.reason for u in report.uncosted] == [
            "backward: backward of an einsum of more than two operands"]


class TestWhatCarriesAGradient:
    def test_nothing_upstream_of_the_weights_has_a_backward_pass(self):
        nodes = [node("Relu", ["X"], ["R"]), node("Sigmoid", ["R"], ["S"]),
                 node("MatMul", ["S", "W"], ["Y"])]
        report = onnxflops.count(model(nodes, {"X": [8, 16]}, [weight("W", (16, 4))]),
                                 training=True)
        assert [n.backward_flops for n in report.nodes] == [0, 0, 2 * 8 * 16 * 4]

    @pytest.mark.parametrize("scale_shape", [(), (1,)], ids=["rank 0", "one element"])
    def test_a_scalar_constant_gets_no_gradient(self, scale_shape):
        nodes = [node("MatMul", ["X", "W"], ["Y"]), node("Mul", ["Y", "half"], ["Z"]),
                 node("Sigmoid", ["Z"], ["S"])]
        weights = [weight("W", (16, 4)),
                   weight("half", scale_shape, value=np.full(scale_shape, 0.5))]
        report = onnxflops.count(model(nodes, {"X": [8, 16]}, weights), training=True)
        _, mul, sigmoid = report.nodes
        assert mul.backward_flops == 8 * 4                           # dY·0.5; no d(half)
        assert sigmoid.backward_flops == 3 * 8 * 4                   # dY·S·(1 − S)

    def test_a_dense_1_bias_is_a_param_and_gets_a_gradient(self):
        # Y = X·W + b with one output unit: b has one element but is the layer's bias
        nodes = [node("MatMul", ["X", "W"], ["Y"]), node("Add", ["Y", "b"], ["Z"])]
        weights = [weight("W", (16, 1)), weight("b", (1,))]
        report = onnxflops.count(model(nodes, {"X": [8, 16]}, weights), training=True)
        _, add = report.nodes
        assert add.params == 1
        assert add.backward_flops == 8 * 1 - 1  # db = Σ over the batch of dZ

    def test_batch_norm_gradient_uses_batch_statistics_and_skips_running_ones(self):
        bn = node("BatchNormalization", ["C", "s", "b", "mean", "var"], ["Y"])
        stats = [weight("s", (4,)), weight("b", (4,)), weight("mean", (4,)),
                 weight("var", (4,), value=[1.0] * 4)]
        after_conv = model([node("Conv", ["X", "W"], ["C"]), bn], {"X": [2, 3, 5, 5]},
                           [weight("W", (4, 3, 1, 1)), *stats])
        on_input = model([node("Identity", ["X"], ["C"]), bn], {"X": [2, 4, 5, 5]}, stats)
        numel = 2 * 4 * 5 * 5
        # x̂, Σ dY, Σ dY·x̂ for dγ and dβ (5 per element), then dX (4 more); none for mean, var.
        assert onnxflops.count(after_conv, training=True).nodes[-1].backward_flops == 9 * numel
        assert onnxflops.count(on_input, training=True).nodes[-1].backward_flops == 5 * numel

    def test_a_loop_whose_body_reads_a_weight_costs_its_body_backward_per_trip(self):
        body = helper.make_graph(
            [node("Identity", ["cond"], ["cond_out"]), node("MatMul", ["h", "W"], ["h_out"])],
            "body",
            [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
             helper.make_tensor_value_info("h", TensorProto.FLOAT, [2, 4])],
            [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
             helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [2, 4])])
        loop = node("Loop", ["M", "", "H0"], ["H"], body=body)
        weights = [weight("M", (), dtype="int64", value=3), weight("W", (4, 4))]
        report = onnxflops.count(model([loop], {"H0": [2, 4]}, weights), training=True)
        assert report.total.macs == 3 * 2 * 4 * 4
        # Every trip back-propagates through h (the state carries a gradient) and into W.
        assert report.total.backward_macs == 3 * 2 * (2 * 4 * 4)
        assert not report.uncosted


class TestReport:
    def test_json_gains_backward_keys_only_when_training(self):
        plain = json.loads(onnxflops.count(dense(4, 8, 2)).to_json())
        assert list(plain["total"]) == [*SUMMED, "unused_params"]
        assert "backward_flops" not in plain["nodes"][0]
        trained = json.loads(onnxflops.count(dense(4, 8, 2), training=True).to_json())
        assert list(trained["total"]) == [*SUMMED, "backward_macs", "backward_flops",
                                          "training_flops", "unused_params"]
        total = trained["total"]
        assert total["training_flops"] == total["flops"] + total["backward_flops"]
        assert trained["nodes"][0]["backward_macs"] == 4 * 8 * 2
        assert trained["by_op_type"]["Add"]["backward_flops"] == 4 * 2 - 2

    def test_cli_prints_forward_backward_and_total(self, tmp_path):
        path = tmp_path / "dense.onnx"
        onnx.save(dense(25, 16, 9), path)
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["count", str(path), "--training", "--by", "node"]) == 0
        text = out.getvalue()
        assert "training: forward FLOPs 7.42 K  backward FLOPs 7.42 K (MACs 3.60 K)  total 14.84 K" \
            in text
        header = next(line for line in text.splitlines() if line.startswith("node "))
        assert "FLOPs  backward FLOPs  params" in header

    def test_ops_lists_the_backward_formulas(self):
        from onnxflops.costs.contraction import conv_backward

        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["ops", "--backward", "--json"]) == 0
        rows = {(r["domain"], r["op_type"]): r for r in json.loads(out.getvalue())}
        assert rows[("", "Conv")] == {"domain": "", "op_type": "Conv", "category": "contraction",
                                      "formula": conv_backward.__doc__.strip().splitlines()[0]}
        assert rows[("", "Sigmoid")]["formula"] == "3·numel(X): dX = dY·Y·(1 − Y)"
        assert rows[("", "Relu")]["formula"] == \
            "backward of the ONNX function body that defines the op"
        assert all(r["formula"].strip() for r in rows.values())
