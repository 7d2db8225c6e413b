"""Sizes that depend on data (NonZero, TopK of a computed k, NonMaxSuppression, Unique, Compress)
are counted at their upper bound, and every node so counted says so: in its row and a warning."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxflops
from onnxflops.graph import GraphView
from helpers import model, node, typed_model, weight

FLOAT, INT64 = TensorProto.FLOAT, TensorProto.INT64


def bound_rows(report):
    return [n.op_type for n in report.nodes if n.bound]


def test_top_k_of_a_k_computed_from_data_takes_the_whole_axis():
    # k = the number of positive entries of `m`: between 0 and all 6 elements of the axis
    nodes = [node("Greater", ["m", "zero"], ["pos"]), node("Cast", ["pos"], ["pi"], to=7),
             node("ReduceSum", ["pi"], ["k"], keepdims=1),
             node("TopK", ["x", "k"], ["values", "indices"], axis=1),
             node("MatMul", ["values", "w"], ["y"])]
    report = onnxflops.count(typed_model(nodes, {"x": (FLOAT, [3, 6]), "m": (FLOAT, [6])},
                                         {"zero": np.float32(0),
                                          "w": np.ones((6, 2), np.float32)}))
    assert not report.uncosted
    top_k = next(n for n in report.nodes if n.op_type == "TopK")
    assert top_k.output_shapes == [[3, 6], [3, 6]]
    # each of the 18 elements offered to a heap of 6: ⌈log2 7⌉ = 3 comparisons
    assert top_k.flops == 18 * 3
    assert report.total.macs == 3 * 6 * 2
    assert bound_rows(report) == ["TopK", "MatMul"]


def test_top_k_of_a_constant_k_is_exact():
    nodes = [node("TopK", ["x", "k"], ["values", "indices"], axis=1),
             node("MatMul", ["values", "w"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [3, 6]}, [weight("k", (1,), np.int64, [2]),
                                                          weight("w", (2, 4))]))
    assert bound_rows(report) == [] and not report.warnings
    assert report.total.macs == 3 * 2 * 4


def test_non_max_suppression_keeps_every_box_it_may():
    # 2 images × 3 classes × at most 5 kept boxes (of 8) = 30 selected rows of 3 indices
    nodes = [node("NonMaxSuppression", ["boxes", "scores", "keep"], ["sel"]),
             node("Cast", ["sel"], ["self"], to=1), node("MatMul", ["self", "w"], ["y"])]
    report = onnxflops.count(typed_model(
        nodes, {"boxes": (FLOAT, [2, 8, 4]), "scores": (FLOAT, [2, 3, 8])},
        {"keep": np.array([5], np.int64), "w": np.ones((3, 4), np.float32)}))
    assert not report.uncosted
    assert report.nodes[0].output_shapes == [[30, 3]]
    assert report.total.macs == 30 * 3 * 4 + 0  # the MatMul; NMS costs FLOPs, no MACs
    assert bound_rows(report) == ["NonMaxSuppression", "Cast", "MatMul"]


def test_unique_of_all_items_distinct():
    nodes = [node("Unique", ["x"], ["u", "idx", "inv", "counts"], axis=0),
             node("MatMul", ["u", "w"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [5, 3]}, [weight("w", (3, 2))]))
    assert not report.uncosted
    assert report.nodes[0].output_shapes == [[5, 3], [5], [5], [5]]
    assert report.total.macs == 5 * 3 * 2


def test_compress_keeps_every_slice_its_condition_may():
    # 4 conditions over 6 rows: at most 4 rows kept
    nodes = [node("Compress", ["x", "c"], ["kept"], axis=0), node("MatMul", ["kept", "w"], ["y"])]
    m = typed_model(nodes, {"x": (FLOAT, [6, 3]), "c": (TensorProto.BOOL, [4])},
                    {"w": np.ones((3, 2), np.float32)})
    report = onnxflops.count(m)
    assert report.nodes[0].output_shapes == [[4, 3]]
    assert report.total.macs == 4 * 3 * 2


def test_the_bound_is_in_the_json_and_the_table():
    nodes = [node("NonZero", ["x"], ["nz"]), node("Cast", ["nz"], ["f"], to=1),
             node("Relu", ["f"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [2, 3]}))
    doc = json.loads(report.to_json())
    assert [n.get("bound") for n in doc["nodes"]] == [True, True, True]
    assert "warning: 3 node(s) counted at an upper bound" in report.to_table()
    assert "every one of the 6 elements nonzero" in report.to_table()


def test_non_zero_of_a_constant_is_evaluated_not_bounded():
    # a stored mask with 3 nonzeros: its indices are known, 3 of them
    nodes = [node("NonZero", ["mask"], ["nz"]), node("Cast", ["nz"], ["f"], to=1),
             node("MatMul", ["x", "f"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [5, 1]},
                                   [weight("mask", None, np.int64, [0, 2, 0, 1, 4])]))
    assert not report.warnings and not any(n.bound for n in report.nodes)
    assert report.total.macs == 5 * 1 * 3


def test_a_top_k_on_an_axis_out_of_range_is_an_error_not_a_traceback():
    # onnxruntime's load refuses it (ONNX's strict inference): no count of it means anything.
    nodes = [node("TopK", ["x", "k"], ["v", "i"], axis=9), node("Relu", ["v"], ["y"])]
    with pytest.raises(onnxflops.OnnxFlopsError, match=r"node 'v' \(TopK\): .*Invalid value "
                                                       r"for attribute axis"):
        onnxflops.count(typed_model(nodes, {"x": (FLOAT, [2, 3]), "k": (INT64, [1])}))


def _branch(name: str, nodes, output: str, dtype=FLOAT):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(output, dtype, None)])


def _if_on_data(then, other, outer: dict, after, constants=None):
    """An If whose condition is a model input (data), its output read by the nodes `after`."""
    nodes = [node("If", ["c"], ["kept"], then_branch=then, else_branch=other), *after]
    return typed_model(nodes, {"c": (TensorProto.BOOL, []), **outer}, constants)


def test_an_if_on_data_takes_each_dim_at_its_larger_branch():
    # "nothing left" gives an empty (0,) tensor, else Relu(v) gives (6,): the If gives at most
    # (6,), so the MatMul after it (6,)·(6, 2) = 12 MACs, a bound
    empty = helper.make_tensor("none", FLOAT, [0], [])
    then = _branch("then", [node("Constant", [], ["t"], value=empty)], "t")
    other = _branch("else", [node("Relu", ["v"], ["e"])], "e")
    report = onnxflops.count(_if_on_data(then, other, {"v": (FLOAT, [6])},
                                         [node("MatMul", ["kept", "w"], ["y"])],
                                         {"w": np.ones((6, 2), np.float32)}))
    assert not report.uncosted
    assert report.nodes[0].output_shapes == [[6]]
    assert report.total.macs == 6 * 2
    assert bound_rows(report) == ["If", "MatMul"]
    assert "the larger of the If's branches (0 or 6)" in report.to_table()


def test_an_if_branch_holding_a_bound_passes_it_on():
    # else: NonZero of a (2, 3) input, at most (2, 6); then: no index, (2, 0). Cast to float and
    # multiplied by a (6, 4) weight: 2·6·4 = 48 MACs, at the NonZero's bound
    empty = helper.make_tensor("none", INT64, [2, 0], [])
    then = _branch("then", [node("Constant", [], ["t"], value=empty)], "t", INT64)
    other = _branch("else", [node("NonZero", ["m"], ["e"])], "e", INT64)
    report = onnxflops.count(_if_on_data(then, other, {"m": (FLOAT, [2, 3])},
                                         [node("Cast", ["kept"], ["f"], to=FLOAT),
                                          node("MatMul", ["f", "w"], ["y"])],
                                         {"w": np.ones((6, 4), np.float32)}))
    assert report.nodes[0].output_shapes == [[2, 6]]
    assert report.total.macs == 2 * 6 * 4
    assert bound_rows(report) == ["If", "Cast", "MatMul"]
    assert "every one of the 6 elements nonzero" in report.to_table()


def test_a_shape_refused_at_a_bound_leaves_its_nodes_uncosted_not_the_count():
    # NonZero of (2, 3) is at most (2, 6): 12 elements, which a Reshape to (5, -1) refuses. A
    # graph traced at other sizes may hold such a Reshape: the nodes it feeds are uncosted, said
    # in a warning; the same Reshape of a (2, 6) input is the model's error.
    reshaped = [node("Reshape", ["f", "shape"], ["r"]), node("Relu", ["r"], ["y"])]
    shape = {"shape": np.array([5, -1], np.int64)}
    report = onnxflops.count(typed_model(
        [node("NonZero", ["m"], ["nz"]), node("Cast", ["nz"], ["f"], to=FLOAT), *reshaped],
        {"m": (FLOAT, [2, 3])}, shape))
    assert [u.op_type for u in report.uncosted] == ["Relu"]
    assert any("upper bounds, which the graph may never meet" in w for w in report.warnings)
    with pytest.raises(onnxflops.OnnxFlopsError, match=r"node 'r' \(Reshape\)"):
        onnxflops.count(typed_model(reshaped, {"f": (FLOAT, [2, 6])}, shape))


def test_an_if_reading_millions_of_box_indices_is_typed_without_holding_them_as_a_shape(
        monkeypatch):
    # ONNX's data propagation holds an integer vector as a shape of one dim per element: on a
    # detector's 10.9 M candidate boxes that exhausted memory. Past shape arithmetic's sizes
    # (4,096 values) an If's one-node model is inferred without it.
    import onnx.shape_inference as inference

    calls, infer = [], inference.infer_shapes

    def spy(model, *args, **kwargs):
        if model.graph.node and model.graph.node[0].op_type == "If":
            idx = next(i for i in model.graph.input if i.name == "idx")
            calls.append((idx.type.tensor_type.shape.dim[0].dim_value, kwargs.get("data_prop")))
        return infer(model, *args, **kwargs)

    monkeypatch.setattr(inference, "infer_shapes", spy)
    for length in (4096, 4097):
        then = _branch("then", [node("Identity", ["idx"], ["t"])], "t", INT64)
        other = _branch("else", [node("Neg", ["idx"], ["e"])], "e", INT64)
        report = onnxflops.count(_if_on_data(then, other, {"idx": (INT64, [length])},
                                             [node("Cast", ["kept"], ["y"], to=FLOAT)]))
        assert report.nodes[0].output_shapes == [[length]]
    assert sorted(set(calls)) == [(4096, True), (4097, False)]


def _pasted_mask_nodes(boxes: str, index: str) -> list:
    """torchvision's _onnx_paste_mask_in_image: a 28×28 mask resized to its box's size,
    w = max(x1 − x0 + 1, 1), h = max(y1 − y0 + 1, 1), read from the integer box coordinates."""
    nodes = [node("Gather", [boxes, index], ["box"], axis=0)]
    for side, (end, start) in (("w", ("two", "zero")), ("h", ("three", "one"))):
        nodes += [node("Gather", ["box", end], [f"{side}_end"], axis=0),
                  node("Gather", ["box", start], [f"{side}_start"], axis=0),
                  node("Sub", [f"{side}_end", f"{side}_start"], [f"{side}_diff"]),
                  node("Add", [f"{side}_diff", "one_1d"], [f"{side}_plus"]),
                  node("Concat", [f"{side}_plus", "one_1d"], [f"{side}_both"], axis=0),
                  node("ReduceMax", [f"{side}_both"], [f"{side}_max"], keepdims=1)]
    return nodes + [node("Concat", ["ones", "h_max", "w_max"], ["sizes"], axis=0),
                    node("Resize", ["mask", "", "", "sizes"], ["pasted"], mode="linear")]


_PASTE_CONSTANTS = {"mask": np.ones((1, 1, 28, 28), np.float32), "ones": np.ones(2, np.int64),
                    "one_1d": np.ones(1, np.int64), "zero": np.int64(0), "one": np.int64(1),
                    "two": np.int64(2), "three": np.int64(3), "low": np.float32(0),
                    "high": np.float32(100)}
# Boxes clipped to [0, 100]: x1 − x0 + 1 ≤ 101, so each pasted mask is at most 1×1×101×101; a
# linear resize of 2 dims makes 3·(2² − 1) = 9 FLOPs per output.
_PASTE_FLOPS = 101 * 101 * 9


def test_a_resize_to_sizes_read_from_clipped_boxes_takes_their_largest():
    nodes = [node("Clip", ["raw", "low", "high"], ["clipped"]),
             node("Cast", ["clipped"], ["boxes"], to=INT64),
             *_pasted_mask_nodes("boxes", "zero")]
    report = onnxflops.count(typed_model(nodes, {"raw": (FLOAT, [3, 4])}, _PASTE_CONSTANTS))
    assert not report.uncosted
    resize = next(n for n in report.nodes if n.op_type == "Resize")
    assert resize.output_shapes == [[1, 1, 101, 101]]
    assert resize.flops == _PASTE_FLOPS
    assert resize.bound
    assert "sizes read from data, at most 1x1x101x101" in report.to_table()


def test_a_resize_in_a_loop_over_boxes_takes_their_largest_each_iteration():
    # Mask R-CNN's paste loop: one Resize per detected box, its sizes read from the outer boxes
    body = helper.make_graph(
        [*_pasted_mask_nodes("boxes", "i"), node("Identity", ["cond"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_value_info("pasted", onnx.TypeProto())])
    nodes = [node("Clip", ["raw", "low", "high"], ["clipped"]),
             node("Cast", ["clipped"], ["boxes"], to=INT64),
             node("Loop", ["trips", "go"], ["all_pasted"], body=body)]
    constants = {**_PASTE_CONSTANTS, "trips": np.int64(3), "go": np.bool_(True)}
    report = onnxflops.count(typed_model(nodes, {"raw": (FLOAT, [3, 4])}, constants))
    assert not report.uncosted
    loop = next(n for n in report.nodes if n.op_type == "Loop")
    assert loop.flops == 3 * _PASTE_FLOPS


def _expanded_boxes_nodes(scale: float) -> tuple[list, dict]:
    """torchvision's expand_boxes before the paste: each box about its centre, scaled,
    x0' = xc − s·(x1 − x0)/2 and x1' = xc + s·(x1 − x0)/2, then made integers."""
    nodes, columns = [], {}
    for k in range(4):
        nodes.append(node("Gather", ["clipped", f"col{k}"], [f"g{k}"], axis=1))
    for side, (start, end) in (("x", (0, 2)), ("y", (1, 3))):
        nodes += [node("Sub", [f"g{end}", f"g{start}"], [f"{side}_span"]),
                  node("Mul", [f"{side}_span", "half_scale"], [f"{side}_half"]),
                  node("Add", [f"g{end}", f"g{start}"], [f"{side}_sum"]),
                  node("Mul", [f"{side}_sum", "half"], [f"{side}_c"]),
                  node("Sub", [f"{side}_c", f"{side}_half"], [f"{side}0"]),
                  node("Add", [f"{side}_c", f"{side}_half"], [f"{side}1"])]
    for k, corner in enumerate(("x0", "y0", "x1", "y1")):
        nodes.append(node("Unsqueeze", [corner, "axis1"], [f"u{k}"]))
        columns[f"col{k}"] = np.int64(k)
    nodes += [node("Concat", ["u0", "u1", "u2", "u3"], ["expanded"], axis=1),
              node("Cast", ["expanded"], ["boxes"], to=INT64)]
    return nodes, {**columns, "half": np.float32(0.5), "half_scale": np.float32(scale / 2),
                   "axis1": np.array([1], np.int64)}


def test_a_box_expanded_about_its_centre_is_bounded_by_its_own_width_not_its_corners():
    # Mask R-CNN pastes masks at boxes expanded by 30/28; here by 1.5, boxes clipped to [0, 100].
    # As affine forms x0' = 1.25·x0 − 0.25·x1 ∈ [−25, 125], and so x1', and x1' − x0' =
    # 1.5·(x1 − x0) ≤ 150: w ≤ 151, met at x0 = 0, x1 = 100 (corners −25 and 125, integers
    # already). Intervals forget that both corners share the centre: xc ∈ [0, 100] and the
    # half-width ∈ [−75, 75] gave corners in [−75, 175], x1' − x0' ≤ 250, w ≤ 251.
    expand, constants = _expanded_boxes_nodes(1.5)
    nodes = [node("Clip", ["raw", "low", "high"], ["clipped"]), *expand,
             *_pasted_mask_nodes("boxes", "zero")]
    report = onnxflops.count(typed_model(nodes, {"raw": (FLOAT, [3, 4])},
                                         {**_PASTE_CONSTANTS, **constants}))
    resize = next(n for n in report.nodes if n.op_type == "Resize")
    assert resize.output_shapes == [[1, 1, 151, 151]]
    assert resize.flops == 151 * 151 * 9 and resize.bound


def test_an_affine_form_follows_a_value_read_twice_once(monkeypatch):
    # 30 doublings x ← x + x of clipped boxes: 2^30 paths back to the boxes; each value is
    # followed once (31 forms). Nothing cancels: x30 ∈ [0, 2^30·100], the intervals' range.
    from onnxflops.analysis import ranges

    nodes = [node("Clip", ["raw", "low", "high"], ["x0"])]
    nodes += [node("Add", [f"x{k}", f"x{k}"], [f"x{k + 1}"]) for k in range(30)]
    typed = onnx.shape_inference.infer_shapes(
        typed_model(nodes, {"raw": (FLOAT, [3, 4])}, _PASTE_CONSTANTS))
    followed, follow = [], ranges._Ranges._affine_of

    def counted(self, name, picks, depth):
        followed.append(name)
        return follow(self, name, picks, depth)

    monkeypatch.setattr(ranges._Ranges, "_affine_of", counted)
    lo, hi = ranges.value_range(GraphView(typed.graph), "x30")
    assert (float(np.min(lo)), float(np.max(hi))) == (0.0, 2.0 ** 30 * 100)
    assert len(followed) <= 31 * 30  # each value once per Add that starts a form, not 2^30


def test_a_resize_to_sizes_from_unclipped_data_stays_uncosted_not_bounded():
    # Without the Clip nothing fixes the boxes' range: no bound is made up, the Resize is
    # reported uncosted.
    nodes = [node("Cast", ["raw"], ["boxes"], to=INT64), *_pasted_mask_nodes("boxes", "zero")]
    report = onnxflops.count(typed_model(nodes, {"raw": (FLOAT, [3, 4])}, _PASTE_CONSTANTS))
    assert [u.op_type for u in report.uncosted] == ["Resize"]
    assert not bound_rows(report)


def _regulated_nodes(durations: str) -> list:
    """A length regulator's frames (FastSpeech's): a tensor of 1 × Σ durations × 8, read by a
    product with an 8 × 8 weight."""
    return [node("ReduceSum", [durations], ["frames"], keepdims=1),
            node("Concat", ["one_1d", "frames", "eight_1d"], ["shape"], axis=0),
            node("ConstantOfShape", ["shape"], ["regulated"],
                 value=helper.make_tensor("v", FLOAT, [1], [0.0])),
            node("MatMul", ["regulated", "w"], ["y"])]


_REGULATED_CONSTANTS = {"one_1d": np.ones(1, np.int64), "eight_1d": np.array([8], np.int64),
                        "zero": np.int64(0), "three": np.int64(3),
                        "w": np.ones((8, 8), np.float32)}


def test_a_shape_read_from_a_sum_of_clipped_durations_takes_its_largest():
    # 4 durations clipped to [0, 3]: at most 4·3 = 12 frames, so 1 × 12 × 8 @ 8 × 8 = 768 MACs
    nodes = [node("Clip", ["d", "zero", "three"], ["clipped"]), *_regulated_nodes("clipped")]
    report = onnxflops.count(typed_model(nodes, {"d": (INT64, [4])}, _REGULATED_CONSTANTS))
    assert not report.uncosted
    filled = next(n for n in report.nodes if n.op_type == "ConstantOfShape")
    assert filled.output_shapes == [[1, 12, 8]]
    assert report.total.macs == 12 * 8 * 8
    assert bound_rows(report) == ["ConstantOfShape", "MatMul"]
    assert "shape read from data, at most 1x12x8" in report.to_table()


def test_a_shape_read_from_unbounded_durations_stays_uncosted_not_bounded():
    # durations clipped below only (FastSpeech2's round(exp(·)) ≥ 0): no largest frame count
    nodes = [node("Max", ["d", "zero"], ["clipped"]), *_regulated_nodes("clipped")]
    report = onnxflops.count(typed_model(nodes, {"d": (INT64, [4])}, _REGULATED_CONSTANTS))
    [uncosted] = report.uncosted
    assert (uncosted.op_type, uncosted.reason) == (
        "MatMul", "shape of 'regulated' is unknown (?x?x?): a size read from data the graph "
        "does not bound (the shape of ConstantOfShape 'regulated')")
    assert not bound_rows(report)
