"""Quantized and low-precision models: integer MACs are int ops, scaling is float work, bytes follow
the real element size; a quantized model has the MACs of its float original."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxflops
from helpers import FLOAT, costed, typed_model

U8, I8, F16, BF16 = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT16, TensorProto.BFLOAT16
RNG = np.random.default_rng(0)


def op(op_type, inputs, outputs, **attrs):
    return helper.make_node(op_type, inputs, outputs, **attrs)


def totals(report):
    return report.total.macs, report.total.flops, report.total.int_ops


SCALE = {"s": np.float32(0.05), "z": np.uint8(128)}


class TestIntegerContractions:
    def test_qlinear_conv(self):
        n, c, h, m, k = 1, 3, 8, 4, 3
        node = op("QLinearConv", ["x", "s", "z", "w", "s", "z", "s", "z", "b"], ["y"],
                  kernel_shape=[k, k])
        report = costed(typed_model([node], {"x": (U8, [n, c, h, h])},
                                    {**SCALE, "w": RNG.integers(0, 255, (m, c, k, k), np.uint8),
                                     "b": np.zeros(m, np.int32)}))
        out = h - k + 1
        y = n * m * out * out
        macs = y * c * k * k
        # int: 2 per MAC, zero points of x and w, the int32 bias; float: requantize 4 per output
        assert totals(report) == (macs, 4 * y, 2 * macs + n * c * h * h + m * c * k * k + y)
        assert report.total.params == m * c * k * k + m

    def test_conv_integer_with_activation_zero_point(self):
        node = op("ConvInteger", ["x", "w", "z"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        report = costed(typed_model([node], {"x": (U8, [2, 3, 5, 5])},
                                    {"w": RNG.integers(0, 255, (4, 3, 3, 3), np.uint8),
                                     "z": np.uint8(3)}))
        macs = 2 * 4 * 5 * 5 * 3 * 9
        assert totals(report) == (macs, 0, 2 * macs + 2 * 3 * 5 * 5)

    @pytest.mark.parametrize("convention", ["default", "exact", "macs"])
    def test_matmul_integer_is_never_flops(self, convention):
        node = op("MatMulInteger", ["a", "b"], ["y"])
        report = costed(typed_model([node], {"a": (I8, [4, 6]), "b": (I8, [6, 5])}),
                        convention=convention)
        assert totals(report) == (4 * 5 * 6, 0, 2 * 4 * 5 * 6)

    def test_qlinear_matmul(self):
        node = op("QLinearMatMul", ["a", "s", "z", "b", "s", "z", "s", "z"], ["y"])
        report = costed(typed_model([node], {"a": (U8, [2, 4, 6]), "b": (U8, [6, 5])}, SCALE))
        macs = 2 * 4 * 5 * 6
        assert totals(report) == (macs, 4 * 2 * 4 * 5, 2 * macs + 2 * 4 * 6 + 6 * 5)


class TestQuantizeDequantize:
    @pytest.mark.parametrize("opset", [10, 13, 21, 28])
    def test_quantize_then_dequantize(self, opset):
        e = 4 * 5
        nodes = [op("QuantizeLinear", ["x", "s", "z"], ["q"]),
                 op("DequantizeLinear", ["q", "s", "z"], ["y"])]
        report = costed(typed_model(nodes, {"x": (FLOAT, [4, 5])}, SCALE, opset=opset))
        # Q: divide, round, add the zero point, saturate; DQ: subtract it (int), scale (float)
        assert totals(report) == (0, 4 * e + e, e)

    def test_dequantize_without_zero_point_and_per_axis(self):
        node = op("DequantizeLinear", ["q", "s"], ["y"], axis=1)
        report = costed(typed_model([node], {"q": (I8, [2, 3, 4])}, {"s": np.ones(3, np.float32)}))
        assert totals(report) == (0, 2 * 3 * 4, 0)

    def test_dynamic_quantize_linear_costs_its_body(self):
        e = 4 * 5
        report = costed(typed_model([op("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
                                    {"x": (FLOAT, [4, 5])}, outputs=["y"]))
        # min and max over X, 9 scalar ops for scale and zero point, then QuantizeLinear
        assert totals(report) == (0, 2 * (e - 1) + 9 + 4 * e, 0)


class TestElementSizes:
    @pytest.mark.parametrize("dtype, bits", [(FLOAT, 32), (F16, 16), (BF16, 16)])
    def test_float_matmul_bytes(self, dtype, bits):
        report = costed(typed_model([op("MatMul", ["a", "b"], ["y"])],
                                    {"a": (dtype, [4, 6]), "b": (dtype, [6, 5])}))
        (node,) = report.nodes
        assert node.macs == 4 * 5 * 6
        assert node.bytes_read == (4 * 6 + 6 * 5) * bits // 8
        assert node.bytes_written == 4 * 5 * bits // 8

    @pytest.mark.parametrize("dtype, bits", [(U8, 8), (TensorProto.INT4, 4),
                                             (TensorProto.UINT4, 4)])
    def test_dequantize_reads_packed_elements(self, dtype, bits):
        node = op("DequantizeLinear", ["q", "s"], ["y"])
        report = costed(typed_model([node], {"q": (dtype, [3, 5])}, {"s": np.float32(0.5)}))
        (entry,) = report.nodes
        assert entry.bytes_read == (3 * 5 * bits + 7) // 8 + 4
        assert entry.bytes_written == 3 * 5 * 4


@pytest.fixture(scope="module")
def resnet_style(tmp_path_factory):
    """A float residual CNN and its QDQ and QOperator quantizations by onnxruntime."""
    quantization = pytest.importorskip("onnxruntime.quantization")

    def w(name, *shape):
        return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32) * 0.1, name)

    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [op("Conv", ["x", "w1", "b1"], ["c1"], **conv), op("Relu", ["c1"], ["r1"]),
             op("Conv", ["r1", "w2", "b2"], ["c2"], **conv), op("Relu", ["c2"], ["r2"]),
             op("Conv", ["r2", "w3", "b3"], ["c3"], **conv), op("Add", ["c3", "r1"], ["s"]),
             op("Relu", ["s"], ["r3"]), op("GlobalAveragePool", ["r3"], ["g"]),
             op("Flatten", ["g"], ["f"]), op("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    weights = [w("w1", 8, 3, 3, 3), w("b1", 8), w("w2", 8, 8, 3, 3), w("b2", 8),
               w("w3", 8, 8, 3, 3), w("b3", 8), w("wf", 10, 8), w("bf", 10)]
    graph = helper.make_graph(nodes, "resnet_style",
                              [helper.make_tensor_value_info("x", FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", FLOAT, [1, 10])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    folder = tmp_path_factory.mktemp("quantized")
    paths = {"float": str(folder / "float.onnx")}
    onnx.save(model, paths["float"])

    class Calibration(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"x": RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)}
                                 for _ in range(2)])

        def get_next(self):
            return next(self.batches, None)

    for name, fmt in (("qdq", quantization.QuantFormat.QDQ),
                      ("qoperator", quantization.QuantFormat.QOperator)):
        paths[name] = str(folder / f"{name}.onnx")
        quantization.quantize_static(paths["float"], paths[name], Calibration(), quant_format=fmt)
    return {name: onnxflops.count(path) for name, path in paths.items()}


def resnet_style_macs() -> int:
    convs = 16 * 16 * 8 * (3 * 9 + 8 * 9 + 8 * 9)
    return convs + 8 * 10


@pytest.mark.parametrize("form", ["qdq", "qoperator"])
def test_quantized_model_has_the_macs_and_params_of_its_float_original(resnet_style, form):
    float_report, quantized = resnet_style["float"], resnet_style[form]
    assert not float_report.uncosted and not quantized.uncosted
    assert float_report.total.macs == quantized.total.macs == resnet_style_macs()
    # scales and zero points are quantization parameters, not weights
    assert quantized.total.params == float_report.total.params


def test_qoperator_model_does_its_macs_in_integers(resnet_style):
    report = resnet_style["qoperator"]
    integer = sum(n.macs for n in report.nodes if n.op_type in ("QLinearConv", "QGemm"))
    assert integer == resnet_style_macs()
    assert report.total.int_ops >= 2 * integer
    assert report.total.params == resnet_style["float"].total.params
