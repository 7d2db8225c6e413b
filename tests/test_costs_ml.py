"""ai.onnx.ml operators against formulas derived by hand."""

from __future__ import annotations

import pytest
from onnx import helper

from helpers import FLOAT, costed, typed_model

ML = {"ai.onnx.ml": 5}
N, C = 4, 3


def ml(op_type, outputs=("y",), **attrs):
    return helper.make_node(op_type, ["x"], list(outputs), domain="ai.onnx.ml", **attrs)


def cost(node):
    report = costed(typed_model([node], {"x": (FLOAT, [N, C])}, outputs=list(node.output),
                                domains=ML))
    return report.total.macs, report.total.flops


def softmax_flops(rows, k):
    return rows * (5 * k - 2)  # max (k − 1), subtract, exp, sum (k − 1), divide


def test_linear_classifier_with_softmax():
    node = ml("LinearClassifier", ("label", "scores"), coefficients=[0.5] * (2 * C),
              intercepts=[0.1, 0.2], classlabels_ints=[0, 1], post_transform="SOFTMAX")
    macs = N * 2 * C
    assert cost(node) == (macs, 2 * macs + N * 2 + softmax_flops(N, 2) + N * (2 - 1))


def test_linear_regressor_two_targets():
    node = ml("LinearRegressor", coefficients=[1.0] * (2 * C), intercepts=[0.0, 1.0], targets=2)
    assert cost(node) == (N * 2 * C, 2 * N * 2 * C + N * 2)


def test_svm_regressor_linear_kernel():
    vectors = 5
    node = ml("SVMRegressor", support_vectors=[0.1] * (vectors * C), coefficients=[1.0] * vectors,
              n_supports=vectors, rho=[0.5], kernel_type="LINEAR")
    macs = N * vectors * C + N * vectors  # kernels, then the weighted sum of them
    assert cost(node) == (macs, 2 * macs + N)


# Tree 0: a root whose false branch splits again (deepest path: 2 comparisons); tree 1: one split.
TREES = dict(nodes_treeids=[0, 0, 0, 0, 0, 1, 1, 1], nodes_nodeids=[0, 1, 2, 3, 4, 0, 1, 2],
             nodes_modes=["BRANCH_LEQ", "LEAF", "BRANCH_LEQ", "LEAF", "LEAF",
                          "BRANCH_LEQ", "LEAF", "LEAF"],
             nodes_featureids=[0, 0, 1, 0, 0, 2, 0, 0], nodes_values=[0.5] * 8,
             nodes_truenodeids=[1, 0, 3, 0, 0, 1, 0, 0],
             nodes_falsenodeids=[2, 0, 4, 0, 0, 2, 0, 0])


def test_tree_ensemble_regressor_walks_each_tree_to_its_deepest_leaf():
    node = ml("TreeEnsembleRegressor", n_targets=1, target_treeids=[0, 0, 0, 1, 1],
              target_nodeids=[1, 3, 4, 1, 2], target_ids=[0] * 5, target_weights=[1.0] * 5, **TREES)
    assert cost(node) == (0, N * ((2 + 1) + 2 * 1))


def test_tree_ensemble_classifier_adds_per_class_and_post_transform():
    node = ml("TreeEnsembleClassifier", ("label", "probabilities"), classlabels_int64s=[0, 1, 2],
              class_treeids=[0, 1], class_nodeids=[1, 1], class_ids=[0, 2],
              class_weights=[1.0, 1.0], post_transform="SOFTMAX", **TREES)
    assert cost(node) == (0, N * ((2 + 1) + 2 * 3) + softmax_flops(N, 3))


def test_tree_ensemble_opset5_same_trees():
    node = ml("TreeEnsemble", n_targets=1, tree_roots=[0, 2],
              nodes_featureids=[0, 1, 2], nodes_modes=helper.make_tensor("m", 2, [3], [0, 0, 0]),
              nodes_splits=helper.make_tensor("s", 1, [3], [0.5] * 3),
              nodes_truenodeids=[0, 0, 0], nodes_trueleafs=[1, 1, 1],
              nodes_falsenodeids=[1, 1, 2], nodes_falseleafs=[0, 1, 1],
              leaf_targetids=[0] * 5, leaf_weights=helper.make_tensor("w", 1, [5], [1.0] * 5))
    # tree 0: node 0 → false → node 1 (2 comparisons); tree 1: node 2 alone (1)
    assert cost(node) == (0, N * ((2 + 1) + 2 * 1))


@pytest.mark.parametrize("norm, per_row", [("MAX", 2 * C - 1), ("L1", 3 * C - 1), ("L2", 3 * C)])
def test_normalizer(norm, per_row):
    assert cost(ml("Normalizer", norm=norm)) == (0, N * per_row)


@pytest.mark.parametrize("node, flops", [
    (ml("Scaler", offset=[0.0] * C, scale=[2.0] * C), 2 * N * C),
    (ml("Binarizer", threshold=0.5), N * C),
    (ml("ArrayFeatureExtractor"), 0),
], ids=["Scaler", "Binarizer", "ArrayFeatureExtractor"])
def test_elementwise_ml_ops(node, flops):
    if node.op_type == "ArrayFeatureExtractor":
        node.input.append("idx")
        report = costed(typed_model([node], {"x": (FLOAT, [N, C]), "idx": (7, [2])}, domains=ML))
        assert (report.total.macs, report.total.flops) == (0, 0)
        return
    assert cost(node) == (0, flops)
