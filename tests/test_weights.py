"""Params and buffers by the graph alone: plain ONNX files carry no record of which initializers the
framework learned, so masks and position tables must be told from weights by their use."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

import onnxflops
from helpers import model, node, typed_model, weight

FLOAT, INT64 = TensorProto.FLOAT, TensorProto.INT64
BATCH, TOKENS, WIDTH, CLASSES, DISTANCES = 2, 4, 8, 3, 7


def attention_then_classifier():
    """One attention head (scores scaled, plus a relative-position bias looked up in a learned
    table, plus a stored mask, then Softmax) and a classifier whose bias precedes a Softmax."""
    nodes = [node("MatMul", ["x", "wq"], ["q"]), node("MatMul", ["x", "wk"], ["k"]),
             node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             node("MatMul", ["q", "kt"], ["scores"]),
             node("Mul", ["scores", "scale"], ["scaled"]),
             node("Gather", ["table", "distance"], ["bias"]),
             node("Add", ["scaled", "bias"], ["biased"], name="add_bias"),
             node("Add", ["biased", "mask"], ["masked"], name="add_mask"),
             node("Softmax", ["masked"], ["probs"], axis=-1),
             node("MatMul", ["probs", "x"], ["attended"]),
             node("MatMul", ["attended", "wc"], ["logits"]),
             node("Add", ["logits", "bc"], ["classes"], name="add_classifier_bias"),
             node("Softmax", ["classes"], ["y"], axis=-1)]
    distance = np.subtract.outer(np.arange(TOKENS), np.arange(TOKENS)) + TOKENS - 1
    weights = [weight("wq", (WIDTH, WIDTH)), weight("wk", (WIDTH, WIDTH)),
               weight("scale", (), value=0.5), weight("table", (DISTANCES,)),
               weight("distance", None, np.int64, distance),
               weight("mask", None, value=np.triu(np.full((TOKENS, TOKENS), -1e9), 1)),
               weight("wc", (WIDTH, CLASSES)), weight("bc", (CLASSES,))]
    return model(nodes, {"x": [BATCH, TOKENS, WIDTH]}, weights)


def test_a_stored_mask_added_to_attention_scores_is_a_buffer():
    report = onnxflops.count(attention_then_classifier())
    # Learned: the projections, the bias table (read by a Gather), the classifier and its bias
    # (added before a Softmax too, but onto a product with a weight, not onto scores).
    assert report.total.params == 2 * WIDTH * WIDTH + DISTANCES + WIDTH * CLASSES + CLASSES
    assert report.total.buffers == TOKENS * TOKENS
    by_name = {n.name: n for n in report.nodes}
    assert (by_name["add_bias"].params, by_name["add_mask"].buffers) == (DISTANCES,
                                                                         TOKENS * TOKENS)
    assert by_name["add_classifier_bias"].params == CLASSES


def test_a_mask_gets_no_gradient_and_a_learned_bias_does():
    report = onnxflops.count(attention_then_classifier(), training=True)
    by_name = {n.name: n for n in report.nodes}
    assert by_name["add_mask"].backward_flops == 0
    # d(bias) sums dY over the batch: one add per element beyond the first batch item.
    assert by_name["add_bias"].backward_flops == (BATCH - 1) * TOKENS * TOKENS


def rotary(angles_of: str = "range"):
    """Angles = positions × inverse frequencies, read by Cos and Sin only: the positions a Range
    up to the sequence length, or given as an input (integers, made float); or, for
    "activations", the activations × a learned matrix."""
    half = WIDTH // 2
    inputs = {"x": (FLOAT, [1, "tokens", WIDTH])}
    frequencies = 1 / 10000 ** (np.arange(half, dtype=np.float32)[None] / half)
    if angles_of == "activations":
        angles = [node("MatMul", ["x", "frequencies"], ["angles"])]
        frequencies = np.ones((WIDTH, half), np.float32)
    else:
        if angles_of == "range":
            positions = [node("Shape", ["x"], ["shape"]),
                         node("Gather", ["shape", "one"], ["length"], axis=0),
                         node("Range", ["zero", "length", "one"], ["positions"])]
        else:
            positions = []
            inputs["positions"] = (INT64, ["tokens"])
        angles = [*positions, node("Cast", ["positions"], ["float_positions"], to=FLOAT),
                  node("Unsqueeze", ["float_positions", "one_axis"], ["column"]),
                  node("MatMul", ["column", "frequencies"], ["angles"])]
    nodes = [*angles, node("Concat", ["angles", "angles"], ["both"], axis=-1),
             node("Cos", ["both"], ["cos"]), node("Sin", ["both"], ["sin"]),
             node("Mul", ["x", "cos"], ["xc"]), node("Mul", ["x", "sin"], ["xs"]),
             node("Add", ["xc", "xs"], ["y"])]
    constants = {"frequencies": frequencies, "zero": np.array(0, np.int64),
                 "one": np.array(1, np.int64), "one_axis": np.array([1], np.int64)}
    return typed_model(nodes, inputs, constants, opset=18)


@pytest.mark.parametrize("angles_of, symbolic", [("range", False), ("range", True),
                                                 ("input", False)],
                         ids=["tables folded", "tables of symbolic length", "positions given"])
def test_rotary_inverse_frequencies_are_a_buffer(angles_of, symbolic):
    bound = {"x": [1, TOKENS, WIDTH], "positions": [TOKENS]}
    inputs = None if symbolic else {k: v for k, v in bound.items()
                                    if k == "x" or angles_of == "input"}
    report = onnxflops.count(rotary(angles_of), inputs, symbolic=symbolic)
    assert not report.uncosted
    assert (report.total.params, report.total.buffers) == (0, WIDTH // 2)


def test_frequencies_applied_to_the_activations_are_learned():
    report = onnxflops.count(rotary("activations"), {"x": [1, TOKENS, WIDTH]})
    assert (report.total.params, report.total.buffers) == (WIDTH * WIDTH // 2, 0)


def test_rotary_tables_folded_into_constants_are_buffers():
    """x·cos + rotate_half(x)·sin with both tables constants (an exporter that folds constants),
    rotate_half(x) = Concat(−x[..., 4:], x[..., :4]); then a learned scale, which stays a param."""
    half = WIDTH // 2
    nodes = [node("Slice", ["x", "start", "middle", "last_axis"], ["first_half"]),
             node("Slice", ["x", "middle", "end", "last_axis"], ["second_half"]),
             node("Neg", ["second_half"], ["negated"]),
             node("Concat", ["negated", "first_half"], ["rotated"], axis=-1),
             node("Mul", ["x", "cos"], ["x_cos"]), node("Mul", ["rotated", "sin"], ["rotated_sin"]),
             node("Add", ["x_cos", "rotated_sin"], ["turned"]),
             node("Mul", ["turned", "gamma"], ["y"])]
    angles = np.outer(np.arange(TOKENS), np.ones(WIDTH)).astype(np.float32)
    constants = {"start": np.array([0]), "middle": np.array([half]), "end": np.array([WIDTH]),
                 "last_axis": np.array([-1]), "cos": np.cos(angles), "sin": np.sin(angles),
                 "gamma": np.ones(WIDTH, np.float32)}
    report = onnxflops.count(typed_model(nodes, {"x": (FLOAT, [1, TOKENS, WIDTH])}, constants))
    assert not report.uncosted
    assert (report.total.params, report.total.buffers) == (WIDTH, 2 * TOKENS * WIDTH)


def test_a_constant_whose_result_is_only_compared_is_a_buffer():
    """Keras merges its causal mask with the padding mask (Minimum) and tests the result: the
    mask is a condition, not a weight; the projection beside it is."""
    nodes = [node("Min", ["padding", "causal"], ["allowed"]),
             node("Greater", ["allowed", "half"], ["keep"]),
             node("MatMul", ["x", "w"], ["scores"]),
             node("Where", ["keep", "scores", "never"], ["masked"]),
             node("Softmax", ["masked"], ["y"], axis=-1)]
    constants = {"causal": np.tril(np.ones((TOKENS, TOKENS), np.float32)),
                 "half": np.array(0.5, np.float32), "never": np.array(-1e9, np.float32),
                 "w": np.ones((WIDTH, TOKENS), np.float32)}
    report = onnxflops.count(typed_model(nodes, {"x": (FLOAT, [TOKENS, WIDTH]),
                                                 "padding": (FLOAT, [1, TOKENS])}, constants))
    assert (report.total.params, report.total.buffers) == (WIDTH * TOKENS, TOKENS * TOKENS)


# --- parameters no node reads, as a converter records them ----------------------------------------

def linear_with_unused_parameters(unused: dict):
    """x(2×4) @ w(4×3) + b(3): 15 params read; the record adds parameters no node reads."""
    from onnxflops.load import record_weight_roles

    m = model([node("MatMul", ["x", "w"], ["xw"]), node("Add", ["xw", "b"], ["y"])],
              {"x": [2, 4]}, [weight("w", (4, 3)), weight("b", (3,))])
    record_weight_roles(m, ["w", "b"], [], exhaustive=True, unused=unused)
    return m


def test_unused_parameters_are_a_total_beside_params_and_named():
    report = onnxflops.count(linear_with_unused_parameters({"mask_token": 5, "aux.weight": 6}))
    assert report.total.params == 4 * 3 + 3
    assert report.total.unused_params == 5 + 6
    doc = report.to_dict()
    assert doc["total"]["unused_params"] == 11
    assert doc["unused_params"] == {"mask_token": 5, "aux.weight": 6}
    table = report.to_table()
    assert "params 15  unused params 11  buffers 0" in table
    assert "11 in 2 tensor(s): mask_token (5), aux.weight (6)" in table


def test_a_model_whose_parameters_are_all_read_reports_no_unused_line():
    report = onnxflops.count(linear_with_unused_parameters({}))
    assert report.total.unused_params == 0 and report.to_dict()["total"]["unused_params"] == 0
    assert "unused" not in report.to_table()


@pytest.mark.parametrize("count", [-1, 2 ** 50 + 1, 10 ** 40])
def test_an_unused_parameter_of_impossible_size_is_refused_in_one_line(count):
    with pytest.raises(onnxflops.OnnxFlopsError, match="unused parameter 'head' has "
                       "(-1|1125899906842625|>10\\^30) elements, which no model holds") as e:
        onnxflops.count(linear_with_unused_parameters({"head": count}))
    assert "\n" not in str(e.value)


def test_an_impossible_unused_size_exits_2_without_a_traceback(tmp_path, capsys):
    import onnx

    from onnxflops.cli import main

    path = tmp_path / "unused.onnx"
    onnx.save(linear_with_unused_parameters({"head": -7}), str(path))
    assert main(["count", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'head' has -7 elements" in err


def test_a_weight_read_twice_is_credited_once_to_its_first_reader():
    # x(2x4) @ w(4x3) twice: 12 params, all on the first MatMul.
    m = model([node("MatMul", ["x", "w"], ["a"], name="first"),
               node("MatMul", ["x", "w"], ["b"], name="second")],
              {"x": [2, 4]}, [weight("w", (4, 3))], outputs=["a", "b"])
    report = onnxflops.count(m)
    assert [(n.name, n.params) for n in report.nodes] == [("first", 12), ("second", 0)]
    assert report.total.params == 12


def test_a_recorded_weight_split_in_two_counts_whole_once():
    # The record says both halves hold framework weight 'w' of 4·6 = 24 elements: 24 params on
    # the first node that reads either half, none on the second, whatever the halves' sizes.
    m = model([node("MatMul", ["x", "w_left"], ["a"], name="left"),
               node("MatMul", ["x", "w_right"], ["b"], name="right")],
              {"x": [2, 4]}, [weight("w_left", (4, 3)), weight("w_right", (4, 3))],
              outputs=["a", "b"])
    onnxflops.load.record_weight_roles(m, {"w_left": "w", "w_right": "w"}, [], sizes={"w": 24},
                                       exhaustive=True)
    report = onnxflops.count(m)
    assert [(n.name, n.params) for n in report.nodes] == [("left", 24), ("right", 0)]
