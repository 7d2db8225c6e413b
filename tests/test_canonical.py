"""Equivalent graph forms reach one canonical cost (onnxflops/canonical/).

Each form is built by hand as an exporter writes it; its count is compared with the canonical op's,
and a near miss (a wrong constant) is shown to stay as written, so no test passes by accident.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
import sympy
from onnx import TensorProto, helper

import onnxflops
from helpers import model, node, typed_model, weight

SQRT_HALF = 1 / math.sqrt(2)


def const(name: str, value, dtype=np.float32) -> onnx.NodeProto:
    return node("Constant", [], [name], value=onnx.numpy_helper.from_array(
        np.array(value, dtype=dtype), name))


def op_types(report) -> list[str]:
    return sorted(n.op_type for n in report.nodes)


class TestGelu:
    X = {"x": [2, 8]}

    def torch_form(self):  # x · 0.5 · (1 + erf(x / √2)) as the torch exporters write it
        return model([const("r2", math.sqrt(2)), node("Div", ["x", "r2"], ["d"]),
                      node("Erf", ["d"], ["e"]), const("one", 1.0), node("Add", ["e", "one"], ["p"]),
                      node("Mul", ["x", "p"], ["xp"]), const("half", 0.5),
                      node("Mul", ["xp", "half"], ["y"])], self.X, opset=18)

    def tensorflow_form(self, factor=SQRT_HALF):  # 0.5·x·erfc(−x·(1/√2)), erfc = 1 − erf
        return model([const("half", 0.5), node("Mul", ["x", "half"], ["h"]),
                      node("Neg", ["x"], ["n"]), const("k", factor), node("Mul", ["n", "k"], ["m"]),
                      node("Erf", ["m"], ["e"]), const("one", 1.0), node("Sub", ["one", "e"], ["s"]),
                      node("Mul", ["h", "s"], ["y"])], self.X, opset=18)

    def test_tensorflow_torch_and_the_gelu_op_cost_the_same(self):
        gelu_op = onnxflops.count(model([node("Gelu", ["x"], ["y"])], self.X, opset=20))
        torch_form = onnxflops.count(self.torch_form())
        tensorflow_form = onnxflops.count(self.tensorflow_form())
        assert gelu_op.total.flops == torch_form.total.flops == tensorflow_form.total.flops \
            == 5 * 16  # divide, erf, add, two multiplies
        assert "Neg" not in op_types(tensorflow_form)

    def test_a_near_miss_is_left_as_written(self):
        not_gelu = onnxflops.count(self.tensorflow_form(factor=0.6))
        assert not_gelu.total.flops == 6 * 16
        assert "Neg" in op_types(not_gelu)

    def test_the_tanh_approximation_is_recognised_too(self):
        c = math.sqrt(2 / math.pi)  # 0.5·x·(1 + tanh(c·(x + 0.044715·x·x·x))), cubed by multiplies
        arithmetic = model([
            node("Mul", ["x", "x"], ["x2"]), node("Mul", ["x2", "x"], ["x3"]),
            const("a", 0.044715), node("Mul", ["x3", "a"], ["ax3"]),
            node("Add", ["x", "ax3"], ["inner"]), const("c", c), node("Mul", ["inner", "c"], ["t"]),
            node("Tanh", ["t"], ["th"]), const("one", 1.0), node("Add", ["th", "one"], ["p"]),
            const("half", 0.5), node("Mul", ["x", "half"], ["h"]), node("Mul", ["h", "p"], ["y"])],
            self.X, opset=18)
        gelu_op = model([node("Gelu", ["x"], ["y"], approximate="tanh")], self.X, opset=20)
        assert onnxflops.count(arithmetic).total.flops == onnxflops.count(gelu_op).total.flops \
            == 8 * 16  # the op's body cubes with Pow: one op fewer than the two multiplies


class TestLayerNorm:
    X = {"x": [1, 5, 6]}
    WEIGHTS = [weight("gamma", (6,)), weight("beta", (6,))]

    def tensorflow_form(self, epsilon=1e-3):
        """Keras 3 / tf2onnx: x·(γ/√(var+ε)) + (β − mean·γ/√(var+ε)), 13 ops."""
        axes = const("axes", [-1], np.int64)
        return model([
            axes, node("ReduceMean", ["x", "axes"], ["mean"]), node("Sub", ["x", "mean"], ["d"]),
            node("Mul", ["d", "d"], ["sq"]), node("ReduceMean", ["sq", "axes"], ["var"]),
            const("eps", epsilon), node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]),
            node("Reciprocal", ["sd"], ["inv"]), node("Mul", ["inv", "gamma"], ["ig"]),
            node("Mul", ["x", "ig"], ["xi"]), node("Neg", ["mean"], ["nm"]),
            node("Mul", ["nm", "ig"], ["r"]), node("Add", ["r", "beta"], ["rb"]),
            node("Add", ["xi", "rb"], ["y"])], self.X, self.WEIGHTS, opset=18)

    def test_tensorflow_arithmetic_costs_what_the_op_costs(self):
        layer_norm_op = onnxflops.count(model(
            [node("LayerNormalization", ["x", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-3)],
            self.X, self.WEIGHTS, opset=18))
        tensorflow_form = onnxflops.count(self.tensorflow_form())
        rows, width = 5, 6
        assert layer_norm_op.total.flops == tensorflow_form.total.flops == 7 * rows * width \
            + 5 * rows
        assert tensorflow_form.total.params == 12
        assert op_types(tensorflow_form) == ["LayerNormalization"]


    def test_two_norms_of_one_tensor_interleaved_are_both_fused(self):
        """GPT-NeoX's parallel attention and MLP normalize one tensor twice; tf2onnx writes the
        second norm (13 nodes) between the first one's statistics and its scaling: 26 nodes grow
        from x, and each norm is found whole."""
        nodes = [n for n in self.tensorflow_form().graph.node]

        def renamed(node_, suffix):
            copy = onnx.NodeProto()
            copy.CopyFrom(node_)
            copy.name += suffix
            for names in (copy.input, copy.output):
                names[:] = [n if n in ("x", "gamma", "beta") else n + suffix for n in names]
            return copy

        first, second = [renamed(n, "1") for n in nodes], [renamed(n, "2") for n in nodes]
        twice = model(first[:9] + second + first[9:], self.X, self.WEIGHTS,
                      outputs=["y1", "y2"], opset=18)
        report = onnxflops.count(twice)
        assert op_types(report) == ["LayerNormalization"] * 2
        assert report.total.flops == 2 * (7 * 5 * 6 + 5 * 5)  # as the op, twice


    def test_a_norm_of_a_weight_table_is_fused(self):
        """DeBERTa normalizes its relative-position table, a weight: every tensor of the norm is
        constant, and only γ and β are its weights (x and what it computes from x are not)."""
        table = self.tensorflow_form().graph
        nodes = list(table.node) + [node("Add", ["y", "z"], ["out"])]
        report = onnxflops.count(model(nodes, {"z": self.X["x"]},
                                       self.WEIGHTS + [weight("x", self.X["x"])], opset=18))
        assert "LayerNormalization" in op_types(report)
        assert report.foldable.flops == 7 * 5 * 6 + 5 * 5  # as the op, on the table
        assert report.total.flops == report.foldable.flops + 5 * 6  # and the add

    def test_an_epsilon_out_of_range_is_not_taken_for_one(self):
        assert "LayerNormalization" not in op_types(onnxflops.count(self.tensorflow_form(2.0)))

    def test_rows_of_symbolic_count_are_fused_as_bound_ones_are(self):
        # Cohere's norm over [batch, seq, 6] under --symbolic: the probe takes 3 of each row dim.
        symbolic = self.tensorflow_form()
        for d, name in zip(symbolic.graph.input[0].type.tensor_type.shape.dim, ("batch", "seq")):
            d.dim_param = name
        report = onnxflops.count(symbolic, symbolic=True)
        assert op_types(report) == ["LayerNormalization"]
        batch, seq = sympy.symbols("batch seq", integer=True, positive=True)
        assert report.total.flops == (7 * 6 + 5) * batch * seq  # as the op per row, above


def attention_scores(scale_both: bool):
    """q·kᵀ with the 1/√d scale on q only (Keras) or split as √ on q and on kᵀ (torch's SDPA)."""
    shapes = {"q": [1, 2, 4, 8], "k": [1, 2, 8, 4]}
    if scale_both:
        nodes = [const("s", 8 ** -0.25), node("Mul", ["q", "s"], ["qs"]),
                 node("Mul", ["k", "s"], ["ks"]), node("MatMul", ["qs", "ks"], ["y"])]
    else:
        nodes = [const("s", 8 ** 0.5), node("Div", ["q", "s"], ["qs"]),
                 node("MatMul", ["qs", "k"], ["y"])]
    return model(nodes, shapes, opset=18)


@pytest.mark.parametrize("scale_both", [True, False])
def test_a_scalar_factor_on_matmul_operands_counts_once_on_the_product(scale_both):
    report = onnxflops.count(attention_scores(scale_both))
    assert report.total.macs == 2 * 4 * 4 * 8
    assert report.total.flops == 2 * report.total.macs + 2 * 4 * 4  # one multiply per score


def test_scalar_factors_that_cancel_cost_nothing():
    # torch's attention translation with scale=1 (HF's OPT and ESM scale q themselves): √1 on q
    # and on kᵀ is no work; 1.0 at all, which a near miss of 1.001 shows is read, not assumed
    def scores(scale):
        shapes = {"q": [1, 2, 4, 8], "k": [1, 2, 8, 4]}
        return model([const("s", scale), node("Mul", ["q", "s"], ["qs"]),
                      node("Mul", ["k", "s"], ["ks"]), node("MatMul", ["qs", "ks"], ["y"])],
                     shapes, opset=18)

    macs = 2 * 4 * 4 * 8
    assert onnxflops.count(scores(1.0)).total.flops == 2 * macs
    assert onnxflops.count(scores(1.001)).total.flops == 2 * macs + 2 * 4 * 4


class TestBias:
    def conv(self, bias_nodes, weights=()):
        return model([*bias_nodes, node("Conv", ["x", "w", "b"], ["y"])], {"x": [1, 2, 5, 5]},
                     [weight("w", (3, 2, 3, 3)), *weights], opset=18)

    def test_a_broadcast_zero_is_not_a_bias(self):
        # torch.export's Conv without bias: Expand(CastLike(0, x), [C_out])
        report = onnxflops.count(self.conv([
            const("zero", 0.0), node("CastLike", ["zero", "x"], ["z"]),
            const("c", [3], np.int64), node("Expand", ["z", "c"], ["b"])]))
        assert report.total.flops == 2 * report.total.macs == 2 * 3 * 9 * 18

    def test_a_zero_bias_parameter_still_counts(self):
        report = onnxflops.count(self.conv([], [weight("b", (3,), value=np.zeros(3))]))
        assert report.total.flops == 2 * report.total.macs + 3 * 9
        assert report.total.params == 3 * 2 * 9 + 3


def test_integer_counters_compared_in_float_are_integer_work():
    # tf2onnx compares int32/int64 counters after casting them to float
    m = model([node("Cast", ["i"], ["f"], to=TensorProto.FLOAT), const("bound", 12.0),
               node("Less", ["f", "bound"], ["y"])], {"i": [4]}, input_type=TensorProto.INT64,
              opset=18)
    report = onnxflops.count(m)
    assert (report.total.flops, report.total.int_ops) == (0, 4)


def test_loop_state_the_body_never_changes_is_read_as_a_parameter():
    # TF's while loop carries the GRU/LSTM weights as loop state; tf2onnx keeps them so.
    body = helper.make_graph(
        [node("Identity", ["cond"], ["cond_out"]), node("MatMul", ["h", "w_state"], ["h_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 4]),
                 helper.make_tensor_value_info("w_state", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("w_state", TensorProto.FLOAT, [4, 4])])
    m = model([const("trips", 3, np.int64), const("go", True, np.bool_),
               node("Loop", ["trips", "go", "x", "w"], ["y", "w_final"], body=body)],
              {"x": [1, 4]}, [weight("w", (4, 4))], outputs=["y"], opset=18)
    report = onnxflops.count(m)
    assert report.total.macs == 3 * 4 * 4
    assert report.total.params == 16


def _masked_softmax(form: str, fill: float) -> onnx.ModelProto:
    """Softmax over 2×4×4 scores masked by a boolean [1,1,4,4]: as tf2onnx lowers tf.where
    ("select": Mul by the cast mask plus fill × the cast negation) or as HF writes it ("add")."""
    h = onnx.helper
    select = [h.make_node("Cast", ["c"], ["kept"], to=onnx.TensorProto.FLOAT),
              h.make_node("Not", ["c"], ["dropped"]),
              h.make_node("Cast", ["dropped"], ["dropped_f"], to=onnx.TensorProto.FLOAT),
              h.make_node("Mul", ["x", "kept"], ["x_kept"]),
              h.make_node("Mul", ["fill", "dropped_f"], ["filled"]),
              h.make_node("Add", ["x_kept", "filled"], ["masked"])]
    add = [h.make_node("Where", ["c", "zero", "fill"], ["mask"]),
           h.make_node("Add", ["x", "mask"], ["masked"])]
    graph = h.make_graph(
        (select if form == "select" else add) + [h.make_node("Softmax", ["masked"], ["y"])],
        form, [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 4, 4]),
               h.make_tensor_value_info("c", onnx.TensorProto.BOOL, [1, 1, 4, 4])],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2, 4, 4])],
        [onnx.numpy_helper.from_array(np.array(fill, np.float32), "fill"),
         onnx.numpy_helper.from_array(np.array(0, np.float32), "zero")])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def test_tensorflows_select_over_scores_costs_what_hfs_mask_add_costs():
    select = onnxflops.count(_masked_softmax("select", -1e9))
    add = onnxflops.count(_masked_softmax("add", -1e9))
    assert select.total.flops == add.total.flops
    assert select.by_op_type()["Add"].flops == 2 * 4 * 4  # one op per score
    assert "Mul" not in select.by_op_type()


def test_a_select_with_a_zero_fill_computes_nothing():
    select = onnxflops.count(_masked_softmax("select", 0.0))
    softmax_only = select.by_op_type()["Softmax"].flops
    assert select.total.flops == softmax_only


def _guarded_softmax(zero: float, output: str = "y") -> onnx.ModelProto:
    """Softmax over 2×4×4 scores with torch's SDPA guard Where(IsNaN(p), zero, p) after it, then
    a MatMul by v (or the guard's result a graph output, `output="guarded"`)."""
    h = onnx.helper
    nodes = [h.make_node("Softmax", ["x"], ["p"]), h.make_node("IsNaN", ["p"], ["nan"]),
             h.make_node("Where", ["nan", "zero", "p"], ["guarded"])]
    if output == "y":
        nodes.append(h.make_node("MatMul", ["guarded", "v"], ["y"]))
    graph = h.make_graph(
        nodes, "guarded", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 4, 4]),
                           h.make_tensor_value_info("v", onnx.TensorProto.FLOAT, [1, 2, 4, 3])],
        [h.make_tensor_value_info(output, onnx.TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array(zero, np.float32), "zero")])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


@pytest.mark.parametrize("output", ["y", "guarded"])
def test_torchs_nan_guard_on_a_softmax_costs_nothing_beyond_the_softmax(output):
    report = onnxflops.count(_guarded_softmax(0.0, output))
    unguarded = onnxflops.count(model([node("Softmax", ["x"], ["p"])], {"x": [1, 2, 4, 4]}))
    matmul = 2 * 4 * 4 * 3 if output == "y" else 0  # 2×4 rows of p · v, 4 MACs per output
    assert report.total.flops == unguarded.total.flops + 2 * matmul
    assert "IsNaN" not in op_types(report)


def test_a_guard_that_fills_another_value_is_left_as_written():
    report = onnxflops.count(_guarded_softmax(1.0))
    assert report.by_op_type()["IsNaN"].flops == 2 * 4 * 4  # one test per probability


# --- forms inside a function: a call's body goes through the same canonical stage ----------------

def _called(form: onnx.ModelProto, monkeypatch) -> onnx.ModelProto:
    """`form`'s graph moved into a model-local function that the graph calls once, left a call
    (as normalize leaves calls that would inline past MAX_INLINED_NODES)."""
    monkeypatch.setattr("onnxflops.normalize.functions.MAX_INLINED_NODES", 0)
    g = form.graph
    opsets = list(form.opset_import) + [helper.make_opsetid("local", 1)]
    weights = [t.name for t in g.initializer]
    inputs = [i.name for i in g.input] + weights
    block = helper.make_function("local", "block", inputs, [o.name for o in g.output], g.node,
                                 list(form.opset_import))
    call = helper.make_node("block", inputs, [o.name for o in g.output], domain="local")
    graph = helper.make_graph([call], "called", g.input, g.output, g.initializer)
    return helper.make_model(graph, opset_imports=opsets, functions=[block])


def _totals(report) -> tuple:
    t = report.total
    return t.macs, t.flops, t.params, t.bytes_read, t.bytes_written


def _zero_bias_conv():
    return TestBias().conv([const("zero", 0.0), node("CastLike", ["zero", "x"], ["z"]),
                            const("c", [3], np.int64), node("Expand", ["z", "c"], ["b"])])


@pytest.mark.parametrize("form, want", [
    # LayerNorm on 5 rows of 6: 7 FLOPs an element and 5 a row, γ and β 12 params; reads x, γ, β
    # (120 + 24 + 24 bytes), writes y (120). Unfused, the body cost its 13 ops: 290 FLOPs.
    ("layer norm", (0, 7 * 30 + 5 * 5, 12, 168, 120)),
    # Conv 2→3 channels, 3×3, on 5×5: 3·9·18 MACs, no bias add (the bias a broadcast zero);
    # reads x and w (200 + 216 bytes), writes y (108). Unfused, the zero was added: +27 FLOPs.
    ("zero bias", (3 * 9 * 18, 2 * 3 * 9 * 18, 54, 416, 108)),
])
def test_a_form_inside_a_function_costs_what_it_costs_in_the_graph(form, want, monkeypatch):
    written = TestLayerNorm().tensorflow_form() if form == "layer norm" else _zero_bias_conv()
    top = onnxflops.count(written)
    inside = onnxflops.count(_called(written, monkeypatch))
    assert [n.op_type for n in inside.nodes] == ["block"]
    assert _totals(top) == want
    assert _totals(inside) == want


def test_a_gelu_inside_a_function_costs_the_ops_fused_form(monkeypatch):
    # TensorFlow's GELU on 2×8 is torch's five ops at the top (the Neg gone): 5 FLOPs an element.
    # A call of it reads x and writes y, 64 bytes each; unfused, its body cost 6·16 FLOPs.
    written = TestGelu().tensorflow_form()
    inside = onnxflops.count(_called(written, monkeypatch))
    assert onnxflops.count(written).total.flops == 5 * 16
    assert _totals(inside) == (0, 5 * 16, 0, 64, 64)


def test_an_op_its_own_canonical_body_fuses_back_is_costed_by_its_body_once():
    # Gelu's body is the erf form that the canonical rules fuse into Gelu: costed as written,
    # one level down, and where its shape is unknown (a Reshape to a shape fed at run time) the
    # reason names that body's node, not Gelu inside Gelu inside Gelu.
    m = typed_model([node("Reshape", ["x", "s"], ["r"]), node("Gelu", ["r"], ["y"])],
                    {"x": (TensorProto.FLOAT, [2, 3]), "s": (TensorProto.INT64, [2])}, opset=20)
    [uncosted] = onnxflops.count(m).uncosted
    assert uncosted.reason == ("in the function body of Gelu, node '' (Div): shape of "
                               "'XSqrt__1' is unknown (?x?)")
