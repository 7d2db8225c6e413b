"""The same architecture counts the same from Keras and from PyTorch (either exporter).

Every pair in models/ is checked three ways: Keras (tf2onnx) against PyTorch's torch.export-based
and TorchScript exporters; each against the analytic numbers derived below; the contractions
against FlopCounterMode; params against each framework's own count. Where the frameworks really
differ (PyTorch's LSTM keeps two bias vectors, Keras's one) the test asserts the difference.
"""

from __future__ import annotations

import pytest

from helpers import SIDES, converted, counted, flop_counter_flops
from onnxflops.models import PAIRS, pair

pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")

# Analytic counts, default convention. Per op: Conv/Gemm 2·MACs + one add per output for a bias;
# Relu/Sigmoid/Tanh 1 per element; MaxPool (k²−1) per output; Clip (ReLU6) 2 per element;
# BatchNorm 4 per element + 2 per channel; Softmax over k: 5k − 2 per row (max, sub, exp, sum,
# div); LayerNorm over D: 7 per element + 5 per row; GELU 5 per element; GRU 17 and LSTM 21 per
# unit per step (gate sums, activations, state update, both bias vectors), a one-bias Keras LSTM 17.
ANALYTIC = {  # name: (MACs, FLOPs, params, buffers)
    # conv 32×97×127 outputs × 16 taps; GRU 97·3·96·(4064 + 96); dense 97·96·256
    "seed003_conv_gru_dense": (
        124_904_960,
        2 * 124_904_960 + 2 * 394_208 + 97 * 96 * 17 + 2 * 97 * 256,  # + conv bias, ReLU; GRU;
        1_224_032, 0),                                                 # dense bias, sigmoid
    "seed001_input_only": (0, 0, 0, 0),
    "seed001_dense_softmax": (1_024, 2 * 1_024 + 1 + 3, 1_025, 0),
    "seed001_conv_dense_softmax": (25_600 + 1_024, 2 * 26_624 + 1_024 + 1 + 3, 26 + 1_025, 0),
    "seed001_conv3": (9_216, 2 * 9_216 + 1_024, 10, 0),
    "seed001_two_convs": (294_912 * 2, 2 * 589_824 + 32 * 1_024 + 1_024, 320 + 289, 0),
    # 2×250×250 outputs × 147 taps; BN 4·125,000 + 2·2; ReLU 125,000
    "seed002_conv_bn_relu": (18_375_000, 36_750_000 + 500_004 + 125_000, 294 + 4, 4),
    "mlp": (64 * 128 + 128 * 64 + 64 * 10, 2 * 17_024 + (128 + 64 + 10) + (128 + 64),
            17_226, 0),
    # conv1 6×28×28 × 25, conv2 16×10×10 × 150, dense 400·120 + 120·84 + 84·10
    "lenet": (117_600 + 240_000 + 48_000 + 10_080 + 840,
              2 * 416_520 + 2 * (4_704 + 1_600) + 3 * (1_176 + 400) + 214 + 204,
              156 + 2_416 + 48_120 + 10_164 + 850, 0),
    # 1×1 32→8, 3×3 8→8, 1×1 8→32 on 8×8; BN on 512, 512, 2048 elements; 3 ReLUs; the skip add
    "resnet_bottleneck": (16_384 + 36_864 + 16_384,
                          2 * 69_632 + (2_064 + 2_064 + 8_256) + (512 + 512 + 2_048) + 2_048,
                          256 + 576 + 256 + 2 * (8 + 8 + 32), 2 * (8 + 8 + 32)),
    # expand 8→48, depthwise 3×3, project 48→8 on 16×16; BN; two ReLU6; the residual add
    "mobilenet_v2_block": (98_304 + 110_592 + 98_304,
                           2 * 307_200 + 2 * (4 * 12_288 + 96) + (4 * 2_048 + 16)
                           + 2 * 2 * 12_288 + 2_048,
                           384 + 432 + 384 + 2 * (48 + 48 + 8), 2 * (48 + 48 + 8)),
    "gru2": (12 * 48 * (10 + 16) + 12 * 48 * (16 + 16), 2 * 33_408 + 2 * 12 * 16 * 17,
             (48 * 10 + 48 * 16 + 96) + (48 * 32 + 96), 0),
    # S=10, E=32, 2 heads of 16, FF 64: QKV, scores, context, out, ff1, ff2
    "transformer_encoder": (
        3 * 10 * 32 * 32 + 2 * 2 * 10 * 10 * 16 + 10 * 32 * 32 + 2 * 10 * 32 * 64,
        2 * 88_320 + (3 * 320 + 320 + 640 + 320) + 2 * 100 + 2 * 10 * (5 * 10 - 2) + 2 * 320
        + 2 * (7 * 320 + 5 * 10) + 5 * 640,  # biases, 1/√d scale, softmax, residuals, LN, GELU
        4 * 32 * 32 + 4 * 32 + 2 * 64 + (2_048 + 64) + (2_048 + 32), 0),
    # conv1d 64×36 outputs × 32·5 taps; dense 64·4; global max over 36 steps
    "text_cnn": (368_640 + 256, 2 * 368_896 + 2 * 2_304 + 35 * 64 + 4,
                 32_000 + (64 * 160 + 64) + (256 + 4), 0),
    # ConvTranspose 16·64 inputs × 8·9; conv 3×32×32 outputs × 72; nearest upsample costs 0
    "upsampling_decoder": (16 * 64 * 72 + 3_072 * 72, 2 * 294_912 + 2_048 + 2_048 + 3_072,
                           (16 * 8 * 9 + 8) + (3 * 8 * 9 + 3), 0),
}
# PyTorch's LSTM adds b_ih and b_hh, Keras's LSTM one bias: per layer 4H more params and 4H more
# bias adds per step.
LSTM_TORCH = (12 * 64 * (10 + 16) + 12 * 64 * (16 + 16), 2 * 44_544 + 2 * 12 * 16 * 21,
              (64 * 10 + 64 * 16 + 128) + (64 * 32 + 128), 0)
LSTM_KERAS = (44_544, 2 * 44_544 + 2 * 12 * 16 * 17, 3_968 - 2 * 64, 0)

NAMES = [p.name for p in PAIRS if p.name != "lstm2"]


def numbers(name: str, side: str) -> tuple:
    t = counted(name, side).total
    return t.macs, t.flops, t.params, t.buffers


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("name", NAMES)
def test_every_pair_counts_the_analytic_numbers_from_keras_and_both_torch_exporters(name, side):
    assert numbers(name, side) == ANALYTIC[name]
    assert counted(name, side).uncosted == []


@pytest.mark.parametrize("side", SIDES)
def test_lstm_difference_between_frameworks_is_exactly_one_bias_vector(side):
    assert numbers("lstm2", side) == (LSTM_KERAS if side == "keras" else LSTM_TORCH)


@pytest.mark.parametrize("name", [p.name for p in PAIRS])
def test_flop_counter_mode_agrees_with_twice_the_macs(name):
    if name == "lstm2":
        pytest.skip("FlopCounterMode has no formula for torch's fused CPU LSTM kernel (it reports "
                    "0); the LSTM's MACs are checked against the analytic formula only")
    p = pair(name)
    assert flop_counter_flops(p.torch_module(), *p.torch_example()) == 2 * counted(
        name, "dynamo").total.macs


@pytest.mark.parametrize("name", [p.name for p in PAIRS])
def test_params_and_buffers_match_each_frameworks_own_count(name):
    p = pair(name)
    keras_model, module = p.keras_model(), p.torch_module()
    keras_report, torch_report = counted(name, "keras"), counted(name, "dynamo")
    trainable = sum(int(w.numpy().size) for w in keras_model.trainable_weights)
    assert keras_report.total.params == trainable
    # count_params() includes BatchNorm's moving statistics: our buffers.
    assert keras_report.total.params + keras_report.total.buffers == keras_model.count_params()
    assert torch_report.total.params == sum(q.numel() for q in module.parameters())
    assert torch_report.total.buffers == sum(b.numel() for b in module.buffers()
                                             if b.is_floating_point())


class TestSeed003:
    """TensorFlow's profiler said ≈20.1 M FLOPs, thop ≈125.0 M MACs; both frameworks must agree."""

    def test_the_gru_runs_97_steps_with_4064_inputs_in_both_frameworks(self):
        keras_loop = next(n for n in counted("seed003_conv_gru_dense", "keras").nodes
                          if n.op_type == "Loop")
        assert keras_loop.detail["trip_count"] == 97
        torch_gru = next(n for n in counted("seed003_conv_gru_dense", "dynamo").nodes
                         if n.op_type == "GRU")
        assert torch_gru.input_shapes[0] == [97, 1, 32 * 127]
        assert keras_loop.macs == torch_gru.macs == 97 * 3 * 96 * (4064 + 96) == 116_213_760

    @pytest.mark.parametrize("side", SIDES)
    def test_totals(self, side):
        total = counted("seed003_conv_gru_dense", side).total
        assert (total.macs, total.params) == (124_904_960, 1_224_032)
        assert counted("seed003_conv_gru_dense", side).to_dict()["total"]["macs"] == 124_904_960

    def test_flop_counter_mode_number(self):
    
        p = pair("seed003_conv_gru_dense")
        assert flop_counter_flops(p.torch_module(), *p.torch_example()) == 249_809_920


def test_keras_channels_last_and_torch_channels_first_inputs_are_both_exercised():
    keras_input = converted("lenet", "keras").graph.input[0].type.tensor_type.shape
    torch_input = converted("lenet", "dynamo").graph.input[0].type.tensor_type.shape
    assert [d.dim_value for d in keras_input.dim] == [1, 32, 32, 1]
    assert [d.dim_value for d in torch_input.dim] == [1, 1, 32, 32]
