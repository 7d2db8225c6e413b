"""Work a forward runs on weights alone, or on a table of literals it builds (a sin-cos position
table from a Range), is the network's work, counted and also reported apart as `foldable` (what a
runtime computes once at load); shape arithmetic, arithmetic on scalars and one-value tensors,
conditions on positions, weight initialisers and moves that assemble weights stay free constant
work."""

from __future__ import annotations

import json

import numpy as np
import pytest

import onnxflops
from helpers import model, node, weight

B, L, D = 2, 5, 8  # batch, tokens, width


def test_a_relative_position_table_projected_through_the_query_weight_is_counted():
    n = 9  # relative distances
    nodes = [node("MatMul", ["x", "wq"], ["q"]),
             node("MatMul", ["table", "wq"], ["r"], name="project_table"),  # weights alone
             node("Transpose", ["r"], ["rt"], perm=[1, 0]),  # a move of a constant: free
             node("MatMul", ["q", "rt"], ["scores"])]
    report = onnxflops.count(model(nodes, {"x": [B, L, D]}, [weight("wq", (D, D)),
                                                             weight("table", (n, D))]))
    table_macs = n * D * D  # 9·8·8 = 576, once per forward
    assert report.foldable.macs == table_macs and report.foldable_nodes == 1
    assert report.total.macs == B * L * D * D + table_macs + B * L * D * n  # 640 + 576 + 720
    assert (report.constant_nodes, report.constant_work.flops) == (1, 0)
    assert report.total.params == D * D + n * D  # each weight once
    assert [n.foldable for n in report.nodes] == [False, True, False]


def test_learned_queries_through_a_linear_are_counted():
    queries, hidden = 6, 4
    nodes = [node("MatMul", ["queries", "w"], ["qw"]), node("Add", ["qw", "b"], ["qp"]),
             node("MatMul", ["x", "qpt"], ["y"])]
    nodes.insert(2, node("Transpose", ["qp"], ["qpt"], perm=[1, 0]))
    report = onnxflops.count(model(nodes, {"x": [B, L, hidden]},
                                   [weight("queries", (queries, D)), weight("w", (D, hidden)),
                                    weight("b", (hidden,))]))
    linear = queries * D * hidden  # 6·8·4 = 192 MACs; 2·192 + 6·4 bias adds = 408 FLOPs
    assert (report.foldable.macs, report.foldable.flops) == (linear, 2 * linear + queries * hidden)
    assert report.foldable_nodes == 2
    assert report.total.macs == linear + B * L * hidden * queries


def test_a_position_bias_mlp_over_a_stored_coordinate_table_is_counted():
    cells, hidden, heads = 16, 12, 3
    nodes = [node("MatMul", ["coords", "w1"], ["h"]), node("Relu", ["h"], ["hr"]),
             node("MatMul", ["hr", "w2"], ["bias"]),  # (16, 3)
             node("Transpose", ["bias"], ["bt"], perm=[1, 0]),  # (3, 16)
             node("Add", ["scores", "bt"], ["y"])]
    report = onnxflops.count(model(nodes, {"scores": [B, heads, cells]},
                                   [weight("coords", (cells, 2)), weight("w1", (2, hidden)),
                                    weight("w2", (hidden, heads))]))
    mlp_macs = cells * 2 * hidden + cells * hidden * heads  # 384 + 576 = 960
    assert report.foldable.macs == mlp_macs
    assert report.foldable.flops == 2 * mlp_macs + cells * hidden  # and 192 Relus
    assert report.total.flops == report.foldable.flops + B * heads * cells  # the Add: 96


def test_weight_normalization_is_counted():
    out, cin, k = 4, 3, 3
    e = out * cin * k * k  # 108 elements of v
    nodes = [node("Mul", ["v", "v"], ["v2"]),
             node("ReduceSum", ["v2", "axes"], ["s"], keepdims=1),
             node("Sqrt", ["s"], ["norm"]), node("Div", ["v", "norm"], ["unit"]),
             node("Mul", ["g", "unit"], ["w"]),
             node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], pads=[1, 1, 1, 1])]
    report = onnxflops.count(model(nodes, {"x": [1, cin, 5, 5]},
                                   [weight("v", (out, cin, k, k)), weight("g", (out, 1, 1, 1)),
                                    weight("axes", None, np.int64, [1, 2, 3])]))
    # v·v 108, sum 108 − 4, sqrt 4, v/‖v‖ 108, g·unit 108
    assert report.foldable.flops == e + (e - out) + out + e + e == 432
    assert report.foldable_nodes == 5 and report.constant_nodes == 0
    assert report.total.macs == 5 * 5 * out * cin * k * k  # the Conv: 2700
    assert report.total.flops == 2 * 2700 + 432
    assert report.total.params == out + e  # g and v, read through the normalized w


def test_weight_standardization_is_counted():
    out, cin = 6, 4
    e = out * cin
    nodes = [node("ReduceMean", ["w"], ["mean"], axes=[1, 2, 3], keepdims=1),
             node("Sub", ["w", "mean"], ["centred"]),
             node("Mul", ["centred", "centred"], ["sq"]),
             node("ReduceMean", ["sq"], ["var"], axes=[1, 2, 3], keepdims=1),
             node("Add", ["var", "eps"], ["var_eps"]), node("Sqrt", ["var_eps"], ["std"]),
             node("Div", ["centred", "std"], ["ws"]),
             node("Conv", ["x", "ws"], ["y"], kernel_shape=[1, 1])]
    report = onnxflops.count(model(nodes, {"x": [1, cin, 3, 3]},
                                   [weight("w", (out, cin, 1, 1)),
                                    weight("eps", (), value=1e-5)]))
    assert not report.uncosted
    # mean e, sub e, square e, mean e, +eps out, sqrt out, divide e
    assert report.foldable.flops == 5 * e + 2 * out == 132
    assert report.total.macs == 3 * 3 * out * cin


def test_a_layernorm_of_a_learned_table_costs_what_it_costs_on_activations():
    rows = 7
    norm = node("LayerNormalization", ["table", "gamma", "beta"], ["t"], axis=-1)
    weights = [weight("gamma", (D,)), weight("beta", (D,))]
    on_table = onnxflops.count(model([norm, node("Add", ["x", "t"], ["y"])], {"x": [B, rows, D]},
                                     [*weights, weight("table", (rows, D))]))
    on_input = onnxflops.count(model([norm], {"table": [rows, D]}, weights))
    assert on_table.foldable.flops == on_input.total.flops > 0
    assert on_table.total.flops == on_input.total.flops + B * rows * D


def test_arithmetic_on_literals_and_shapes_stays_free():
    # scale = 1/sqrt(64) computed in the graph, and a width read off the input's shape
    nodes = [node("Sqrt", ["sixty_four"], ["root"]), node("Reciprocal", ["root"], ["scale"]),
             node("Shape", ["x"], ["s"]), node("Cast", ["s"], ["sf"], to=1),
             node("Mul", ["sf", "scale"], ["sized"]),
             node("Mul", ["x", "scale"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [B, L, D]}, [weight("sixty_four", (),
                                                                    value=64.0)]),
                             )
    assert report.foldable_nodes == 0 and report.constant_nodes == 5
    assert report.total.flops == B * L * D


def _sin_cos_table(rows: int, half: int) -> list:
    """A detector encoder's position table, rebuilt in each forward from literals: rows·1 @ 1·half
    outer products of a Range of positions and of frequencies, their Sin and Cos concatenated."""
    return [node("Range", ["zero", "n_rows", "one"], ["positions"]),
            node("Unsqueeze", ["positions", "axis_1"], ["column"]),  # rows × 1
            node("Range", ["zero", "n_freq", "one"], ["steps"]),
            node("Mul", ["steps", "step"], ["frequencies"]),
            node("Unsqueeze", ["frequencies", "axis_0"], ["row"]),  # 1 × half
            node("MatMul", ["column", "row"], ["angles"]),
            node("Add", ["column", "half_step"], ["shifted"]),
            node("MatMul", ["shifted", "row"], ["angles_shifted"]),
            node("Sin", ["angles"], ["sines"]), node("Cos", ["angles_shifted"], ["cosines"]),
            node("Concat", ["sines", "cosines"], ["table"], axis=1)]


def _literals(rows: int, half: int) -> list:
    return [weight("zero", (), value=0.0), weight("one", (), value=1.0),
            weight("n_rows", (), value=float(rows)), weight("n_freq", (), value=float(half)),
            weight("step", (), value=0.1), weight("half_step", (), value=0.5),
            weight("axis_0", None, np.int64, [0]), weight("axis_1", None, np.int64, [1])]


def test_a_sin_cos_table_built_from_literals_and_projected_by_products_is_counted():
    # DETR's sine embedding: arange → outer products → sin/cos → concat, in every forward, then
    # added to the features. FlopCounterMode counts the two 400×1 @ 1×64 products.
    rows, half = 400, 64
    nodes = _sin_cos_table(rows, half) + [node("Add", ["x", "table"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [1, rows, 2 * half]}, _literals(rows, half)))
    products = 2 * rows * 1 * half  # 2 · 400·1·64 = 51,200 MACs
    assert report.foldable.macs == report.total.macs == products == 51_200
    # Ranges: N + 1 adds and 3 for the count; the frequencies' Mul; the shift's Add; 2 per MAC;
    # a Sin or a Cos per element. The Unsqueezes and the Concat move, and stay free.
    table_flops = (rows + 4) + (half + 4) + half + rows + 2 * products + 2 * rows * half
    assert report.foldable.flops == table_flops == 154_536
    assert report.foldable_nodes == 8 and report.constant_nodes == 3
    assert report.total.flops == table_flops + rows * 2 * half  # and the Add onto x


def test_a_condition_on_positions_and_arithmetic_on_shapes_stay_free():
    # A causal mask from positions compared (a condition, then a select and a scale of it), and
    # Resize-like sizes computed in float from the input's shape: no table, nothing counted.
    nodes = [node("Shape", ["x"], ["s"]), node("Cast", ["s"], ["sf"], to=1),
             node("Mul", ["sf", "two"], ["sizes"]),
             node("Range", ["zero", "n", "one"], ["i"]),
             node("Unsqueeze", ["i", "axis_1"], ["rows"]),
             node("Less", ["i", "rows"], ["later"]),
             node("Where", ["later", "minus_inf", "zero_f"], ["mask"]),
             node("Mul", ["mask", "two"], ["scaled"]),
             node("Add", ["x", "scaled"], ["y"])]
    def counted(positions):  # torch.arange(L) is int64, or float
        literals = [weight("zero", (), positions, 0), weight("one", (), positions, 1),
                    weight("n", (), positions, L), weight("two", (), value=2.0),
                    weight("minus_inf", (), value=-1e9), weight("axis_1", None, np.int64, [1])]
        literals.append(weight("zero_f", (), value=0.0))
        return onnxflops.count(model(nodes, {"x": [B, L, L]}, literals, outputs=["y", "sizes"]))

    report = counted(np.int64)
    assert report.foldable_nodes == 0 and report.foldable.flops == 0
    assert report.total.flops == B * L * L  # the Add alone
    # Float positions that only make a condition are positions still: free, as the int64 ones.
    floats = counted(np.float32)
    assert (floats.foldable_nodes, floats.foldable.flops) == (0, 0)
    assert floats.total.flops == B * L * L


def test_an_initialiser_draw_scaled_by_a_table_stays_free():
    # a weight's initial values drawn and scaled per position by a Range (seed 000's form)
    nodes = [node("Range", ["zero", "n", "one"], ["i"]),
             node("RandomNormal", [], ["r"], shape=[D], dtype=1),
             node("Mul", ["r", "i"], ["w"]), node("Mul", ["x", "w"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [3, D]}, [
        weight("zero", (), value=0.0), weight("one", (), value=1.0),
        weight("n", (), value=float(D))]))
    assert report.foldable_nodes == 1 and report.foldable.flops == D + 4  # the Range itself
    assert report.total.flops == D + 4 + 3 * D


def test_a_tensor_of_one_value_the_code_made_is_a_literal_not_a_weight():
    # Longformer without an attention mask: torch.ones(1, 16) traced to a Constant node, its
    # diagonal mask an outer product of it (contracted index of size 1); LED, the same code, got
    # its ones from ConstantOfShape, free. The same product of a Constant holding a weight (ONNX
    # files that store weights in Constant nodes) is the network's work.
    from onnx import numpy_helper

    def outer(values):
        table = numpy_helper.from_array(np.asarray(values, dtype=np.float32).reshape(L, 1))
        nodes = [node("Constant", [], ["mask"], value=table),
                 node("Einsum", ["mask", "mask"], ["diagonal"], equation="xd,yd->xy"),
                 node("Add", ["scores", "diagonal"], ["y"])]
        return onnxflops.count(model(nodes, {"scores": [B, L, L]}))

    product = L * L * 1  # x·y·d = 5·5·1 = 25 MACs
    ones = outer(np.ones(L))
    assert (ones.total.macs, ones.foldable.macs, ones.constant_work.macs) == (0, 0, product)
    stored = outer(np.arange(1.0, L + 1))
    assert (stored.total.macs, stored.foldable.macs) == (product, product)


def test_foldable_work_in_the_json_and_the_table():
    nodes = [node("Mul", ["w", "two"], ["w2"]), node("MatMul", ["x", "w2"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [3, D]}, [weight("w", (D, 4)),
                                                          weight("two", (), value=2.0)]))
    doc = json.loads(report.to_json())
    assert doc["foldable"]["nodes"] == 1 and doc["foldable"]["flops"] == D * 4
    assert [n.get("foldable", False) for n in doc["nodes"]] == [True, False]
    assert "foldable (counted; a runtime computes it once at load): 1 nodes" in report.to_table()


@pytest.mark.parametrize("op", ["RandomNormalLike", "RandomUniformLike"])
def test_work_on_an_initialiser_op_stays_free(op):
    # a weight initialised in the graph: a draw like w, scaled by a literal (seed 000's form)
    nodes = [node(op, ["w"], ["r"]), node("Mul", ["r", "scale"], ["w2"]),
             node("MatMul", ["x", "w2"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [3, D]}, [weight("w", (D, D)),
                                                          weight("scale", (), value=0.02)]))
    assert report.foldable_nodes == 0 and report.constant_nodes == 2
    assert report.total.flops == 2 * 3 * D * D


@pytest.mark.parametrize("op", ["RandomNormal", "RandomUniform"])
def test_noise_drawn_each_forward_through_the_weights_is_counted_and_never_foldable(op):
    """UnivNet draws its `noise_sequence` in the forward and runs it through a Conv, a
    ConvTranspose and more (5,529,600 MACs that FlopCounterMode counts were dropped as an
    initialiser's work): a draw that meets a weight is the network's work, and what is computed
    from it too. No runtime folds it: the draw changes at each run."""
    c_in, c_out, k, steps = 4, 3, 3, 10
    nodes = [node(op, [], ["noise"], shape=[1, c_in, steps], dtype=1),
             node("Conv", ["noise", "w"], ["h"], kernel_shape=[k], pads=[1, 1]),  # reads w
             node("Relu", ["h"], ["a"]),  # computed from that work
             node("Mul", ["noise", "strength"], ["scaled"]),  # a learned strength: a weight
             node("MatMul", ["x", "a"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [2, c_out]},
                                   [weight("w", (c_out, c_in, k)),
                                    weight("strength", (1, c_in, 1))],
                                   outputs=["y", "scaled"]))
    conv_macs = c_out * c_in * k * steps  # 3·4·3·10 = 360
    assert report.total.macs == conv_macs + 2 * c_out * steps  # + the MatMul's 60
    assert report.foldable_nodes == 0 and report.foldable.macs == 0
    assert report.constant_nodes == 1  # the draw alone
    assert [n.op_type for n in report.nodes] == ["Conv", "Relu", "Mul", "MatMul"]
    assert report.total.flops == 2 * conv_macs + c_out * steps + c_in * steps + 2 * 60
    assert report.total.params == c_out * c_in * k + c_in


def test_compare_shows_the_foldable_work_of_each_side():
    # a doubles its weight in the graph (D·4 = 32 FLOPs on weights alone); b stores it doubled
    a = model([node("Mul", ["w", "two"], ["w2"]), node("MatMul", ["x", "w2"], ["y"])],
              {"x": [3, D]}, [weight("w", (D, 4)), weight("two", (), value=2.0)])
    b = model([node("MatMul", ["x", "w2"], ["y"])], {"x": [3, D]}, [weight("w2", (D, 4))])
    result = onnxflops.compare(a, b)
    doc = result.to_dict()
    assert (doc["a"]["foldable"]["flops"], doc["b"]["foldable"]["flops"]) == (D * 4, 0)
    assert any(line.split()[:3] == ["foldable", "flops", "32"]
               for line in result.to_text().splitlines())


def test_a_table_whose_values_end_as_gather_indices_is_addressing_and_free():
    # A nearest resize as torch.export decomposes it: source positions (i + 0.5) · 2 − 0.5 of a
    # float Range, floored and cast to int64, gather the input: no work on values. The same
    # table added to the data is a table: its Range (6 + 4, Range's function body), Add, Mul and
    # Sub (6 each): 28 FLOPs, foldable.
    def resized(into_data: bool):
        nodes = [node("Range", ["zero", "n", "one"], ["i"]),
                 node("Add", ["i", "half"], ["centre"]), node("Mul", ["centre", "two"], ["src"]),
                 node("Sub", ["src", "half"], ["pos"])]
        if into_data:
            nodes += [node("Add", ["x", "pos"], ["y"])]
        else:
            nodes += [node("Floor", ["pos"], ["floored"]),
                      node("Cast", ["floored"], ["index"], to=7),
                      node("Gather", ["x", "index"], ["y"], axis=1)]
        literals = [weight("zero", (), value=0.0), weight("one", (), value=1.0),
                    weight("n", (), value=6.0), weight("half", (), value=0.5),
                    weight("two", (), value=2.0)]
        return onnxflops.count(model(nodes, {"x": [2, 12] if not into_data else [2, 6]},
                                     literals))

    gathered = resized(into_data=False)
    assert (gathered.foldable_nodes, gathered.total.flops) == (0, 0)
    added = resized(into_data=True)
    assert (added.foldable_nodes, added.foldable.flops) == (4, 6 + 4 + 3 * 6)
    assert added.total.flops == 28 + 2 * 6
