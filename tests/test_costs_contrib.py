"""onnxruntime's com.microsoft ops cost exactly what their unfused standard-op forms cost.

Each case is a pair of tiny models: the fused op, and the standard ops it fuses over the same
tensors. The two are counted independently by the whole pipeline.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from helpers import FLOAT, INT64, costed, typed_model

MS = {"com.microsoft": 1}
F, I, U8, I8 = FLOAT, INT64, TensorProto.UINT8, TensorProto.INT8
RNG = np.random.default_rng(0)


def ms(op_type, inputs, outputs, **attrs):
    return helper.make_node(op_type, inputs, outputs, domain="com.microsoft", **attrs)


def op(op_type, inputs, outputs, **attrs):
    return helper.make_node(op_type, inputs, outputs, **attrs)


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def totals(report):
    t = report.total
    return t.macs, t.flops, t.int_ops


def assert_same_cost(fused, unfused, inputs, constants, fused_outputs, unfused_outputs=None,
                     same_params=True):
    """Both forms costed in full, with the same MACs, FLOPs, integer ops (and params)."""
    fused_report = costed(typed_model(fused, inputs, constants, outputs=fused_outputs, domains=MS))
    unfused_report = costed(typed_model(unfused, inputs, constants, outputs=unfused_outputs))
    assert totals(fused_report) == totals(unfused_report)
    if same_params:
        assert fused_report.total.params == unfused_report.total.params
    assert fused_report.total.flops + fused_report.total.int_ops > 0
    return fused_report


N, C, H, W, M = 1, 4, 6, 6, 8
CONV_IN = {"x": (F, [N, C, H, W])}
CONV_W = {"w": floats(M, C, 3, 3), "b": floats(M)}
Y = {"y": (F, [N, M, H, W])}


class TestFusedContractions:
    def test_fused_conv_with_residual_and_relu(self):
        fused = [ms("FusedConv", ["x", "w", "b", "z"], ["y"], activation="Relu",
                    kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
        unfused = [op("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                   op("Add", ["c", "z"], ["s"]), op("Relu", ["s"], ["y"])]
        report = assert_same_cost(fused, unfused, {**CONV_IN, "z": (F, [N, M, H, W])}, CONV_W, Y)
        y = N * M * H * W
        assert report.total.macs == y * C * 9
        assert report.total.flops == 2 * y * C * 9 + y + y + y  # bias, residual, max(x, 0)

    @pytest.mark.parametrize("name, params, standard", [
        ("LeakyRelu", [0.2], [op("LeakyRelu", ["c"], ["y"], alpha=0.2)]),
        ("HardSigmoid", [0.2, 0.5], [op("HardSigmoid", ["c"], ["y"], alpha=0.2, beta=0.5)]),
        ("Clip", [0.0, 6.0], [op("Clip", ["c", "lo", "hi"], ["y"])]),
        ("Sigmoid", [], [op("Sigmoid", ["c"], ["y"])]),
    ])
    def test_fused_conv_activations(self, name, params, standard):
        fused = [ms("FusedConv", ["x", "w", "b"], ["y"], activation=name,
                    kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                    **({"activation_params": params} if params else {}))]
        unfused = [op("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                   *standard]
        bounds = {"lo": np.float32(0.0), "hi": np.float32(6.0)} if name == "Clip" else {}
        assert_same_cost(fused, unfused, CONV_IN, {**CONV_W, **bounds}, Y)

    def test_nhwc_conv_is_conv_between_transposes(self):
        fused = [ms("NhwcConv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
        unfused = [op("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
                   op("Conv", ["xt", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                   op("Transpose", ["c"], ["y"], perm=[0, 2, 3, 1])]
        assert_same_cost(fused, unfused, {"x": (F, [N, H, W, C])}, CONV_W,
                         {"y": (F, [N, H, W, M])})

    def test_fused_gemm_with_leaky_relu(self):
        fused = [ms("FusedGemm", ["a", "b", "c"], ["y"], alpha=0.5, transB=1,
                    activation="LeakyRelu", activation_alpha=0.1)]
        unfused = [op("Gemm", ["a", "b", "c"], ["g"], alpha=0.5, transB=1),
                   op("LeakyRelu", ["g"], ["y"], alpha=0.1)]
        report = assert_same_cost(fused, unfused, {"a": (F, [3, 5])},
                                  {"b": floats(7, 5), "c": floats(7)}, {"y": (F, [3, 7])})
        assert report.total.macs == 3 * 7 * 5

    @pytest.mark.parametrize("attrs, a_shape, perm", [
        ({"transA": 1, "alpha": 2.0}, [2, 5, 3], [0, 2, 1]),
        ({"transA": 1, "transBatchA": 1}, [5, 2, 3], [1, 2, 0]),
        ({"transBatchA": 1}, [3, 2, 5], [1, 0, 2]),
    ])
    def test_fused_matmul_is_transpose_matmul_scale(self, attrs, a_shape, perm):
        fused = [ms("FusedMatMul", ["a", "b"], ["y"], **attrs)]
        unfused = [op("Transpose", ["a"], ["at"], perm=perm), op("MatMul", ["at", "b"], ["p"])]
        if attrs.get("alpha", 1.0) != 1.0:
            unfused.append(op("Mul", ["p", "alpha"], ["y"]))
        constants = {"alpha": np.float32(attrs.get("alpha", 1.0))}
        report = assert_same_cost(fused, unfused, {"a": (F, a_shape), "b": (F, [2, 5, 4])},
                                  constants, {"y": (F, [2, 3, 4])}, [unfused[-1].output[0]])
        assert report.total.macs == 2 * 3 * 4 * 5

    def test_gemm_fast_gelu(self):
        fused = [ms("GemmFastGelu", ["x", "w", "b"], ["y"])]
        unfused = [op("MatMul", ["x", "w"], ["m"]), op("Add", ["m", "b"], ["s"]),
                   op("Gelu", ["s"], ["y"], approximate="tanh")]
        assert_same_cost(fused, unfused, {"x": (F, [2, 3, 5])}, {"w": floats(5, 7),
                                                                  "b": floats(7)},
                         {"y": (F, [2, 3, 7])})


X = {"x": (F, [2, 3, 16]), "skip": (F, [2, 3, 16])}
XY = {"y": (F, [2, 3, 16])}


class TestActivationsAndNormalizations:
    @pytest.mark.parametrize("fused, unfused, constants", [
        ([ms("Gelu", ["x"], ["y"])], [op("Gelu", ["x"], ["y"])], {}),
        ([ms("FastGelu", ["x", "b"], ["y"])],
         [op("Add", ["x", "b"], ["s"]), op("Gelu", ["s"], ["y"], approximate="tanh")],
         {"b": floats(16)}),
        ([ms("BiasGelu", ["x", "b"], ["y"])],
         [op("Add", ["x", "b"], ["s"]), op("Gelu", ["s"], ["y"])], {"b": floats(16)}),
        ([ms("QuickGelu", ["x"], ["y"], alpha=1.702)],
         [op("Mul", ["x", "alpha"], ["ax"]), op("Sigmoid", ["ax"], ["s"]),
          op("Mul", ["x", "s"], ["y"])], {"alpha": np.float32(1.702)}),
        ([ms("BiasAdd", ["x", "b", "skip"], ["y"])],
         [op("Add", ["x", "b"], ["s"]), op("Add", ["s", "skip"], ["y"])],
         {"b": floats(16)}),
        ([ms("BiasSoftmax", ["x", "b"], ["y"], axis=-1)],
         [op("Add", ["x", "b"], ["s"]), op("Softmax", ["s"], ["y"], axis=-1)],
         {"b": floats(16)}),
        ([ms("BiasDropout", ["x", "b", "skip"], ["y"])],
         [op("Add", ["x", "b"], ["s"]), op("Add", ["s", "skip"], ["d"]),
          op("Dropout", ["d"], ["y"])], {"b": floats(16)}),
        ([ms("SkipLayerNormalization", ["x", "skip", "g", "be", "b"], ["y"])],
         [op("Add", ["x", "skip"], ["s"]), op("Add", ["s", "b"], ["t"]),
          op("LayerNormalization", ["t", "g", "be"], ["y"])],
         {"g": floats(16), "be": floats(16), "b": floats(16)}),
        ([ms("SkipSimplifiedLayerNormalization", ["x", "skip", "g"], ["y"])],
         [op("Add", ["x", "skip"], ["s"]), op("RMSNormalization", ["s", "g"], ["y"])],
         {"g": floats(16)}),
        ([ms("LayerNormalization", ["x", "g", "be"], ["y"])],
         [op("LayerNormalization", ["x", "g", "be"], ["y"])],
         {"g": floats(16), "be": floats(16)}),
    ], ids=lambda v: v[0].op_type if isinstance(v, list) else "")
    def test_fused_elementwise_and_norms(self, fused, unfused, constants):
        assert_same_cost(fused, unfused, X, constants, XY)

    def test_simplified_layer_norm_is_rms_norm(self):
        report = costed(typed_model([op("SimplifiedLayerNormalization", ["x", "g"], ["y"])], X,
                                    {"g": floats(16)}, outputs=XY))
        rms = costed(typed_model([op("RMSNormalization", ["x", "g"], ["y"])], X, {"g": floats(16)}))
        assert totals(report) == totals(rms)

    def test_bias_split_gelu(self):
        fused = [ms("BiasSplitGelu", ["x", "b"], ["y"])]
        unfused = [op("Add", ["x", "b"], ["s"]), op("Split", ["s"], ["l", "r"], axis=-1,
                                                    num_outputs=2),
                   op("Gelu", ["r"], ["g"]), op("Mul", ["l", "g"], ["y"])]
        assert_same_cost(fused, unfused, X, {"b": floats(16)}, {"y": (F, [2, 3, 8])})

    @pytest.mark.parametrize("activation", [0, 1])
    def test_group_norm_nhwc_with_swish(self, activation):
        fused = [ms("GroupNorm", ["x", "g", "b"], ["y"], groups=2, activation=activation,
                    channels_last=1, epsilon=1e-5)]
        # ONNX infers no output shape for GroupNormalization: the Swish runs on a tensor of
        # the same shape, its input.
        unfused = [op("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
                   op("GroupNormalization", ["xt", "g", "b"], ["y"], num_groups=2),
                   *([op("Sigmoid", ["xt"], ["s"]), op("Mul", ["xt", "s"], ["a"])]
                     if activation else [])]
        assert_same_cost(fused, unfused, {"x": (F, [1, 4, 4, 6])},
                         {"g": floats(6), "b": floats(6)}, {"y": (F, [1, 4, 4, 6])})

    def test_embed_layer_norm(self):
        fused = [ms("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "g", "b"], ["y"])]
        unfused = [op("Gather", ["we", "ids"], ["w"]), op("Gather", ["pe", "pos"], ["p"]),
                   op("Gather", ["se", "seg"], ["s"]), op("Add", ["w", "p"], ["wp"]),
                   op("Add", ["wp", "s"], ["e"]), op("LayerNormalization", ["e", "g", "b"], ["y"])]
        constants = {"we": floats(30, 16), "pe": floats(8, 16), "se": floats(2, 16),
                     "g": floats(16), "b": floats(16)}
        inputs = {"ids": (I, [2, 5]), "seg": (I, [2, 5])}
        fused_report = costed(typed_model(fused, inputs, constants, outputs={"y": (F, [2, 5, 16])},
                                          domains=MS))
        unfused_report = costed(typed_model(unfused, {**inputs, "pos": (I, [5])}, constants))
        assert totals(fused_report) == totals(unfused_report)
        assert fused_report.total.params == unfused_report.total.params


B, S, HEADS, HEAD = 2, 5, 4, 8
HIDDEN = HEADS * HEAD


class TestAttention:
    @pytest.mark.parametrize("causal", [0, 1])
    def test_attention_is_projection_then_onnx_attention(self, causal):
        fused = [ms("Attention", ["x", "w", "b"], ["y"], num_heads=HEADS, unidirectional=causal)]
        unfused = [op("MatMul", ["x", "w"], ["m"]), op("Add", ["m", "b"], ["qkv"]),
                   op("Split", ["qkv"], ["q", "k", "v"], axis=-1, num_outputs=3),
                   op("Attention", ["q", "k", "v"], ["y"], q_num_heads=HEADS,
                      kv_num_heads=HEADS, is_causal=causal)]
        constants = {"w": floats(HIDDEN, 3 * HIDDEN), "b": floats(3 * HIDDEN)}
        report = assert_same_cost(fused, unfused, {"x": (F, [B, S, HIDDEN])}, constants,
                                  {"y": (F, [B, S, HIDDEN])})
        # projection, then Q·Kᵀ and P·V per head
        assert report.total.macs == B * S * HIDDEN * 3 * HIDDEN + 2 * B * HEADS * S * S * HEAD

    def test_multi_head_attention_with_bias_and_past(self):
        past = 3
        fused = [ms("MultiHeadAttention", ["q", "k", "v", "b", "", "", "pk", "pv"], ["y"],
                    num_heads=HEADS)]
        unfused = [op("Split", ["b"], ["bq", "bk", "bv"], axis=0, num_outputs=3),
                   op("Add", ["q", "bq"], ["q1"]), op("Add", ["k", "bk"], ["k1"]),
                   op("Add", ["v", "bv"], ["v1"]),
                   op("Attention", ["q1", "k1", "v1", "", "pk", "pv"], ["y"],
                      q_num_heads=HEADS, kv_num_heads=HEADS)]
        inputs = {n: (F, [B, S, HIDDEN]) for n in ("q", "k", "v")}
        inputs.update({n: (F, [B, HEADS, past, HEAD]) for n in ("pk", "pv")})
        report = assert_same_cost(fused, unfused, inputs, {"b": floats(3 * HIDDEN)},
                                  {"y": (F, [B, S, HIDDEN])})
        assert report.total.macs == 2 * B * HEADS * S * (past + S) * HEAD

    def test_group_query_attention_with_cache(self):
        kv_heads, past = 2, 3
        fused = [ms("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "lens", "total"],
                    ["y", "present_k", "present_v"], num_heads=HEADS, kv_num_heads=kv_heads)]
        unfused = [op("Attention", ["q", "k", "v", "", "pk", "pv"], ["y"], q_num_heads=HEADS,
                      kv_num_heads=kv_heads, is_causal=1)]
        inputs = {"q": (F, [B, S, HIDDEN]), "k": (F, [B, S, kv_heads * HEAD]),
                  "v": (F, [B, S, kv_heads * HEAD]), "pk": (F, [B, kv_heads, past, HEAD]),
                  "pv": (F, [B, kv_heads, past, HEAD])}
        present = (F, [B, kv_heads, past + S, HEAD])
        fused_report = costed(typed_model(
            fused, {**inputs, "lens": (TensorProto.INT32, [B]), "total": (TensorProto.INT32, [])},
            outputs={"y": (F, [B, S, HIDDEN]), "present_k": present, "present_v": present},
            domains=MS))
        unfused_report = costed(typed_model(unfused, inputs))
        assert totals(fused_report) == totals(unfused_report)
        assert fused_report.total.macs == 2 * B * HEADS * S * (past + S) * HEAD

    def test_rotary_embedding_reorders_the_standard_inputs(self):
        fused = [ms("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"])]
        unfused = [op("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], num_heads=HEADS)]
        constants = {"cos": floats(16, HEAD // 2), "sin": floats(16, HEAD // 2)}
        report = assert_same_cost(fused, unfused, {"x": (F, [B, S, HIDDEN]), "pos": (I, [B, S])},
                                  constants, {"y": (F, [B, S, HIDDEN])})
        assert report.total.flops == 3 * B * S * HIDDEN  # x·cos ∓ x'·sin per element


class TestQuantizedContrib:
    def test_matmul_nbits_is_dequantized_weight_matmul(self):
        m, k, n, block = 3, 64, 6, 32
        blocks = k // block
        fused = [ms("MatMulNBits", ["a", "bq", "scales", "zp", "", "bias"], ["y"], K=k, N=n,
                    bits=4, block_size=block)]
        unfused = [op("DequantizeLinear", ["w4", "ws", "wz"], ["w"], axis=0, block_size=block),
                   op("MatMul", ["a", "w"], ["p"]), op("Add", ["p", "bias"], ["y"])]
        constants = {
            "bq": RNG.integers(0, 255, (n, blocks, block // 2), dtype=np.uint8),
            "scales": floats(n * blocks), "zp": np.full((n, 1), 0x88, np.uint8),
            "bias": floats(n),
            "w4": helper.make_tensor("w4", TensorProto.UINT4, [k, n], [7] * (k * n)),
            "ws": floats(blocks, n),
            "wz": helper.make_tensor("wz", TensorProto.UINT4, [blocks, n], [8] * (blocks * n)),
        }
        tensors = {name: v for name, v in constants.items() if not hasattr(v, "dims")}
        model_f = typed_model(fused, {"a": (F, [m, k])}, tensors, outputs={"y": (F, [m, n])},
                              domains=MS)
        model_u = typed_model(unfused, {"a": (F, [m, k])}, {"bias": constants["bias"],
                                                            "ws": constants["ws"]})
        model_u.graph.initializer.extend([constants["w4"], constants["wz"]])
        fused_report, unfused_report = costed(model_f), costed(model_u)
        assert totals(fused_report) == totals(unfused_report) == (m * n * k,
                                                                   2 * m * n * k + m * n, 0)
        # Params: the k·n weights (two 4-bit ones to each byte of B) and the bias, as unpacked.
        assert fused_report.total.params == unfused_report.total.params == k * n + n
        (matmul,) = fused_report.nodes
        # A in fp32, B as 4-bit pairs packed in bytes, scales, zero points, bias
        assert matmul.bytes_read == 4 * m * k + n * k // 2 + 4 * n * blocks + n + 4 * n

    def test_qlinear_add_is_its_qdq_form(self):
        scales = {"sa": np.float32(0.1), "za": np.uint8(3), "sb": np.float32(0.2),
                  "zb": np.uint8(5), "sc": np.float32(0.3), "zc": np.uint8(7)}
        fused = [ms("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"])]
        unfused = [op("DequantizeLinear", ["a", "sa", "za"], ["fa"]),
                   op("DequantizeLinear", ["b", "sb", "zb"], ["fb"]),
                   op("Add", ["fa", "fb"], ["s"]), op("QuantizeLinear", ["s", "sc", "zc"], ["y"])]
        shape = [2, 3, 4]
        report = assert_same_cost(fused, unfused, {"a": (U8, shape), "b": (U8, shape)}, scales,
                                  {"y": (U8, shape)})
        e = 2 * 3 * 4
        # DQ: a multiply (float) and a zero-point subtraction (int) each; Add; Q: 4 per element
        assert totals(report) == (0, 2 * e + e + 4 * e, 2 * e)

    @pytest.mark.parametrize("name, standard, attrs, out_shape", [
        ("QLinearSigmoid", "Sigmoid", {}, [1, 4, 6, 6]),
        ("QLinearLeakyRelu", "LeakyRelu", {"alpha": 0.1}, [1, 4, 6, 6]),
        ("QLinearSoftmax", "Softmax", {"axis": -1}, [1, 4, 6, 6]),
        ("QLinearGlobalAveragePool", "GlobalAveragePool", {}, [1, 4, 1, 1]),
        ("QLinearAveragePool", "AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]},
         [1, 4, 3, 3]),
    ])
    def test_qlinear_unary_ops_are_their_qdq_form(self, name, standard, attrs, out_shape):
        scales = {"sx": np.float32(0.1), "zx": np.uint8(3), "sy": np.float32(0.2),
                  "zy": np.uint8(5)}
        fused = [ms(name, ["x", "sx", "zx", "sy", "zy"], ["y"], **attrs)]
        unfused = [op("DequantizeLinear", ["x", "sx", "zx"], ["fx"]),
                   op(standard, ["fx"], ["s"], **attrs),
                   op("QuantizeLinear", ["s", "sy", "zy"], ["y"])]
        assert_same_cost(fused, unfused, {"x": (U8, [1, 4, 6, 6])}, scales, {"y": (U8, out_shape)})

    def test_qlinear_concat_is_its_qdq_form(self):
        scales = {"sy": np.float32(0.1), "zy": np.uint8(3), "s1": np.float32(0.2),
                  "z1": np.uint8(5), "s2": np.float32(0.3), "z2": np.uint8(7)}
        fused = [ms("QLinearConcat", ["sy", "zy", "a", "s1", "z1", "b", "s2", "z2"], ["y"], axis=1)]
        unfused = [op("DequantizeLinear", ["a", "s1", "z1"], ["fa"]),
                   op("DequantizeLinear", ["b", "s2", "z2"], ["fb"]),
                   op("Concat", ["fa", "fb"], ["c"], axis=1),
                   op("QuantizeLinear", ["c", "sy", "zy"], ["y"])]
        assert_same_cost(fused, unfused, {"a": (U8, [2, 3]), "b": (U8, [2, 5])}, scales,
                         {"y": (U8, [2, 8])})

    def test_dynamic_quantize_matmul(self):
        fused = [ms("DynamicQuantizeMatMul", ["a", "b", "bs", "bz", "bias"], ["y"])]
        unfused = [op("DynamicQuantizeLinear", ["a"], ["aq", "as", "az"]),
                   op("MatMulInteger", ["aq", "b", "az", "bz"], ["acc"]),
                   op("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
                   op("Mul", ["as", "bs"], ["scale"]), op("Mul", ["accf", "scale"], ["p"]),
                   op("Add", ["p", "bias"], ["y"])]
        constants = {"b": RNG.integers(-100, 100, (5, 7), dtype=np.int8),
                     "bs": floats(7), "bz": np.zeros(7, np.int8), "bias": floats(7)}
        # The unfused Mul of the scales credits b's scales as a parameter; the fused op does not.
        report = assert_same_cost(fused, unfused, {"a": (F, [3, 5])}, constants,
                                  {"y": (F, [3, 7])}, same_params=False)
        assert report.total.int_ops == 2 * 3 * 7 * 5 + 3 * 5 + 5 * 7  # int MACs, zero points

    def test_qgemm_hand_derived(self):
        m, k, n = 3, 5, 7
        node = ms("QGemm", ["a", "sa", "za", "b", "sb", "zb", "c", "sy", "zy"], ["y"], transB=1)
        constants = {"sa": np.float32(0.1), "za": np.uint8(3), "b": np.ones((n, k), np.uint8),
                     "sb": np.float32(0.2), "zb": np.uint8(5), "c": np.zeros(n, np.int32),
                     "sy": np.float32(0.3), "zy": np.uint8(7)}
        report = costed(typed_model([node], {"a": (U8, [m, k])}, constants,
                                    outputs={"y": (U8, [m, n])}, domains=MS))
        # int MACs, zero points of A and B, the int32 bias add; requantize 4 per output
        assert totals(report) == (m * n * k, 4 * m * n, 2 * m * n * k + m * k + n * k + m * n)
