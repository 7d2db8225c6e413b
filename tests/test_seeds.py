"""Every number of the seed documents that concerns a single graph, reproduced exactly.

Keras-side and cross-framework numbers are in test_parity.py; seed 004 (backward) in test_training.py.
"""

from __future__ import annotations

import pytest

import onnxflops
from helpers import flop_counter_flops, model, node, weight


def dense_model(m: int, p: int, n: int, *, variables: bool = False):
    """y = matmul(X, W) + b with X [m, p], W [p, n], b [n]."""
    nodes = [node("MatMul", ["X", "W"], ["XW"]), node("Add", ["XW", "b"], ["Y"])]
    weights = [weight("W", (p, n)), weight("b", (n,))]
    if variables:  # the post's setup: X is a variable too (an overridable initializer)
        weights.append(weight("X", (m, p)))
        return model(nodes, {"X": [m, p], "W": [p, n], "b": [n]}, weights)
    return model(nodes, {"X": [m, p]}, weights)


class TestSeed000DenseLayer:
    def test_macs_and_both_flop_conventions(self):
        m, p, n = 25, 16, 9
        default = onnxflops.count(dense_model(m, p, n))
        exact = onnxflops.count(dense_model(m, p, n), convention="exact")
        assert default.total.macs == m * n * p == 3_600
        assert default.total.flops == m * n * 2 * p + m * n == 7_425      # TF-style
        assert exact.total.flops == m * n * (2 * p - 1) + m * n == 7_200  # 2p − 1 per dot product

    def test_params_with_x_as_input_and_as_variable(self):
        assert onnxflops.count(dense_model(25, 16, 9)).total.params == 16 * 9 + 9 == 153
        as_variables = onnxflops.count(dense_model(25, 16, 9, variables=True))
        assert as_variables.total.params == 25 * 16 + 16 * 9 + 9 == 553
        assert as_variables.total.flops == 7_425

    def test_initializer_ops_are_never_counted(self):
        # W = RandomNormal·scale + shift, built inside the graph as TF1 graphs did: constant work.
        nodes = [node("RandomNormal", [], ["R"], shape=[16, 9], dtype=1),
                 node("Mul", ["R", "scale"], ["RS"]), node("Add", ["RS", "shift"], ["W"]),
                 node("MatMul", ["X", "W"], ["XW"]), node("Add", ["XW", "b"], ["Y"])]
        weights = [weight("scale", (), value=0.1), weight("shift", (), value=0.0),
                   weight("b", (9,))]
        report = onnxflops.count(model(nodes, {"X": [25, 16]}, weights))
        assert report.total.flops == 7_425
        assert report.constant_nodes == 3
        assert report.constant_work.flops == 2 * 16 * 9  # the Mul and Add over W
        assert [n.op_type for n in report.nodes] == ["MatMul", "Add"]

    def test_dense_100_to_200(self):
        report = onnxflops.count(dense_model(1, 100, 200))
        assert report.total.macs == 100 * 200 == 20_000
        assert report.total.flops == 2 * 20_000 + 200 == 40_200
        exact = onnxflops.count(dense_model(1, 100, 200), convention="exact")
        assert exact.total.flops == 200 * (2 * 100 - 1) + 200 == 40_000

    def test_same_conv_stride_1(self):
        batch, h, w, f, c, g = 2, 8, 8, 3, 4, 5
        conv = node("Conv", ["x", "k"], ["y"], kernel_shape=[f, f], pads=[1, 1, 1, 1])
        report = onnxflops.count(model([conv], {"x": [batch, c, h, w]}, [weight("k", (g, c, f, f))]))
        assert report.total.macs == batch * h * w * f * f * c * g


def keras_like_conv(out_channels: int, in_channels: int, k: int, x: str, y: str, name: str):
    """Conv2D(out, k, padding='same') with its bias, NCHW."""
    pad = (k - 1) // 2
    return (node("Conv", [x, f"{name}.w", f"{name}.b"], [y], kernel_shape=[k, k],
                 pads=[pad, pad, k - 1 - pad, k - 1 - pad]),
            [weight(f"{name}.w", (out_channels, in_channels, k, k)),
             weight(f"{name}.b", (out_channels,))])


def flatten_dense_softmax(x: str):
    nodes = [node("Flatten", [x], ["flat"]), node("Gemm", ["flat", "d.w", "d.b"], ["logits"]),
             node("Softmax", ["logits"], ["probs"], axis=-1)]
    return nodes, [weight("d.w", (1024, 1)), weight("d.b", (1,))]


class TestSeed001SmallKerasModels:
    shape = {"x": [1, 1, 32, 32]}

    def test_input_layer_only_is_zero(self):
        report = onnxflops.count(model([node("Identity", ["x"], ["y"])], self.shape))
        assert (report.total.macs, report.total.flops, report.total.params) == (0, 0, 0)

    def test_flatten_dense_softmax(self):
        nodes, weights = flatten_dense_softmax("x")
        report = onnxflops.count(model(nodes, self.shape, weights))
        assert report.total.macs == 1_024
        by_op = report.by_op_type()
        assert by_op["Gemm"].flops == 2_048 + 1  # 2·MACs + the bias add
        # Softmax over one element: ReduceMax and ReduceSum reduce nothing; Sub, Exp, Div: 3.
        assert by_op["Softmax"].flops == 3
        assert report.total.params == 1_024 + 1

    def test_conv_flatten_dense(self):
        conv, conv_w = keras_like_conv(1, 1, 5, "x", "c", "conv")
        nodes, weights = flatten_dense_softmax("c")
        report = onnxflops.count(model([conv, *nodes], self.shape, conv_w + weights))
        by_op = report.by_op_type()
        assert by_op["Conv"].macs == 32 * 32 * 25 == 25_600
        assert by_op["Conv"].flops == 2 * 25_600 + 1_024  # + one bias add per output
        assert report.total.macs == 26_624

    def test_conv3(self):
        conv, w = keras_like_conv(1, 1, 3, "x", "c", "conv")
        assert onnxflops.count(model([conv], self.shape, w)).total.macs == 9_216

    def test_two_convs(self):
        first, w1 = keras_like_conv(32, 1, 3, "x", "c1", "conv1")
        second, w2 = keras_like_conv(1, 32, 3, "c1", "c2", "conv2")
        report = onnxflops.count(model([first, second], self.shape, w1 + w2))
        assert [n.macs for n in report.nodes] == [294_912, 294_912]
        assert report.total.macs == 589_824


class TestSeed002ConvBatchNormRelu:
    @pytest.fixture(scope="class")
    def reports(self):
        nodes = [node("Conv", ["x", "conv1.w"], ["c"], kernel_shape=[7, 7], strides=[2, 2],
                      pads=[3, 3, 3, 3]),
                 node("BatchNormalization", ["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                      ["b"]),
                 node("Relu", ["b"], ["y"])]
        weights = [weight("conv1.w", (2, 3, 7, 7))] + [weight(f"bn.{k}", (2,)) for k in
                                                      ("scale", "bias", "mean", "var")]
        m = model(nodes, {"x": [1, 3, 500, 500]}, weights)
        return onnxflops.count(m), onnxflops.count(m, convention="exact")

    def test_conv_layer(self, reports):
        default, exact = reports
        conv = default.nodes[0]
        assert conv.output_shapes == [[1, 2, 250, 250]]
        assert conv.params == 7 * 7 * 3 * 2 == 294
        assert conv.macs == (7 * 7 * 3) * (250 * 250 * 2) == 18_375_000
        assert exact.nodes[0].flops == (2 * 147 - 1) * 125_000 == 36_625_000
        assert conv.bytes_read == (500 * 500 * 3 + 294) * 4 == 3_001_176
        assert conv.bytes_written == 250 * 250 * 2 * 4 == 500_000
        assert conv.bytes_read + conv.bytes_written == 3_501_176

    def test_batchnorm_and_relu(self, reports):
        bn, relu = reports[0].nodes[1:]
        assert (bn.params, bn.buffers) == (4, 4)
        assert relu.params == 0
        assert reports[0].total.params == 298 and reports[0].total.buffers == 4


@pytest.mark.slow
class TestSeed003ConvGruDense:
    """The PyTorch model of seed 003, exported by torch.onnx.export."""

    @pytest.fixture(scope="class")
    def torch_model(self):
        torch = pytest.importorskip("torch")
        from torch import nn

        class ConvGru(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv2d = nn.Conv2d(1, 32, kernel_size=(4, 4), stride=(1, 2))
                self.gru = nn.GRU(input_size=4064, hidden_size=96)
                self.fc = nn.Linear(96, 256)

            def forward(self, x):
                out = torch.relu(self.conv2d(x))
                batch, channel, frame, freq = out.size()
                out, _ = self.gru(torch.reshape(out, (batch, frame, freq * channel)))
                return torch.sigmoid(self.fc(out))

        torch.manual_seed(0)
        return ConvGru().eval(), torch.randn(1, 1, 100, 256)

    @pytest.fixture(scope="class")
    def report(self, torch_model, tmp_path_factory):
        import torch

        module, x = torch_model
        path = tmp_path_factory.mktemp("seed003") / "seed003.onnx"
        torch.onnx.export(module, (x,), str(path), dynamo=False)
        return onnxflops.count(path)

    def test_shapes_97_steps_of_4064(self, report):
        conv = next(n for n in report.nodes if n.op_type == "Conv")
        gru = next(n for n in report.nodes if n.op_type == "GRU")
        assert conv.output_shapes[0] == [1, 32, 97, 127]
        assert gru.input_shapes[0][-1] == 4_064 and 97 in gru.input_shapes[0]

    def test_macs_and_params(self, report):
        by_op = report.by_op_type()
        assert by_op["Conv"].macs == 32 * 97 * 127 * 16 == 6_307_328
        assert by_op["GRU"].macs == 97 * 3 * 96 * (4064 + 96) == 116_213_760
        assert by_op["MatMul"].macs == 97 * 96 * 256 == 2_383_872
        assert report.total.macs == 124_904_960
        assert report.total.params == 1_224_032

    def test_flop_counter_mode_agrees(self, torch_model, report):
        module, x = torch_model
        assert flop_counter_flops(module, x) == 249_809_920 == 2 * report.total.macs
        assert report.total.params == sum(p.numel() for p in module.parameters())
