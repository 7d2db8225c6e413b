"""Selection, random, string and linear-algebra ops against hand-derived formulas."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from helpers import FLOAT, INT64, costed, typed_model


def cost(nodes, inputs, constants=None, opset=28, outputs=None):
    report = costed(typed_model(nodes, inputs, constants, opset=opset, outputs=outputs))
    return report.total.macs, report.total.flops, report.total.int_ops


@pytest.mark.parametrize("opset, k_as", [(9, "attribute"), (11, "input"), (24, "input")])
def test_top_k_heap_of_size_k(opset, k_as):
    k = 7
    if k_as == "attribute":
        node, constants = helper.make_node("TopK", ["x"], ["v", "i"], k=k), {}
    else:
        node, constants = helper.make_node("TopK", ["x", "k"], ["v", "i"]), {"k": np.array([k])}
    # each of the 300 elements offered to a heap of 7: ⌈log2 8⌉ = 3 comparisons
    assert cost([node], {"x": (FLOAT, [3, 100])}, constants, opset) == (0, 300 * 3, 0)


def test_top_k_on_integers_is_int_ops():
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"])
    assert cost([node], {"x": (INT64, [4, 16])}, {"k": np.array([1])}) == (0, 0, 4 * 16 * 1)


def test_unique_sorts():
    node = helper.make_node("Unique", ["x"], ["y"])
    assert cost([node], {"x": (FLOAT, [100])}) == (0, 100 * 7, 0)


@pytest.mark.parametrize("opset, axis, reduced", [(13, -1, 5), (11, 1, 4 * 5)])
def test_hardmax_argmax_per_slice(opset, axis, reduced):
    node = helper.make_node("Hardmax", ["x"], ["y"], axis=axis)
    e = 3 * 4 * 5
    assert cost([node], {"x": (FLOAT, [3, 4, 5])}, opset=opset) == (0, e - e // reduced, 0)


@pytest.mark.parametrize("attrs, ops", [({}, 0), ({"scale": 2.0}, 1), ({"mean": 1.0, "scale": 2.0},
                                                                        2)])
def test_random_normal_like_counts_scale_and_shift(attrs, ops):
    # A random tensor is a run-time input of the Add below; the draws are constant-shaped.
    node = helper.make_node("RandomNormalLike", ["x"], ["r"], **attrs)
    report = costed(typed_model([node], {"x": (FLOAT, [3, 4])}))
    assert (report.total.flops + report.constant_work.flops) == ops * 12


def test_multinomial():
    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=5)
    # per row: exp and running sum over 10 classes, ⌈log2 10⌉ = 4 comparisons per sample
    assert cost([node], {"x": (FLOAT, [3, 10])}) == (0, 3 * (2 * 10 + 5 * 4), 0)


def test_bernoulli_costs_its_body():
    # RandomUniformLike (constant-shaped draws, no scale), then Less and a Cast per element
    node = helper.make_node("Bernoulli", ["x"], ["y"])
    assert cost([node], {"x": (FLOAT, [3, 10])}) == (0, 30, 0)


def test_det_lu_with_partial_pivoting():
    m, batch = 4, 5
    node = helper.make_node("Det", ["x"], ["y"])
    lu = sum((m - k) + (m - k) + 2 * (m - k) ** 2 for k in range(1, m))
    assert cost([node], {"x": (FLOAT, [batch, m, m])}) == (0, batch * (lu + m - 1), 0)


def test_string_ops_one_int_op_per_element():
    node = helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="LOWER")
    assert cost([node], {"x": (TensorProto.STRING, [1, 6])}) == (0, 0, 6)


def test_tf_idf_vectorizer():
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TFIDF", min_gram_length=1,
                            max_gram_length=2, max_skip_count=1, ngram_counts=[0, 4],
                            ngram_indexes=[0, 1, 2, 3, 4, 5],
                            pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7], weights=[1.0] * 6)
    # per position: 1 unigram lookup + 2 bigram lookups (skip 0 and 1); one weighting per output
    assert cost([node], {"x": (TensorProto.INT32, [2, 6])}) == (0, 2 * 6, 2 * 6 * 3)


@pytest.mark.parametrize("dtype, expected", [(INT64, (0, 3, 5 + 1)), (FLOAT, (0, 3 + 5 + 1, 0))])
def test_range_costs_its_body(dtype, expected):
    # Range(0, 5, 1) feeding a run-time Add: its count (Sub, Div, Ceil, Relu), then 5 Adds. Of
    # integers, work on shapes: free; of floats, a table made from literals: foldable, counted.
    kind = np.int64 if dtype == INT64 else np.float32
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
             helper.make_node("Add", ["x", "r"], ["y"])]
    # One dtype for all three, as Range requires (older numpy widens a float32 0-d array + 5).
    bounds = {name: np.array(v, dtype=kind) for name, v in (("start", 0), ("limit", 5),
                                                            ("delta", 1))}
    report = costed(typed_model(nodes, {"x": (dtype, [5])}, bounds))
    made = report.constant_work if dtype == INT64 else report.foldable
    assert (made.macs, made.flops, made.int_ops) == expected
