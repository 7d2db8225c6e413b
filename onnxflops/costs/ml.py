"""ai.onnx.ml: classical machine-learning operators. Their parameters are attributes, so they are
costed from the attribute sizes (structure, never the values); post transforms cost the standard
op they name (Softmax, Sigmoid).

Tree ensembles are documented estimates: a sample walks every tree from its root to a leaf, one
comparison per branch node on the way; the count takes each tree's deepest path (an upper bound),
then one add per tree and target for the leaf weights.
"""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import (
    CLASSICAL_ML,
    CONTRACTION,
    DATA_MOVEMENT,
    ZERO,
    Cost,
    rule,
)
from onnxflops.errors import Uncostable
from onnxflops.graph import TensorInfo

ML = "ai.onnx.ml"


def ml_rule(op_types, **kwargs):
    return rule(op_types, domain=ML, **kwargs)


def rows_and_features(n: Node):
    x = n.input(0).dims
    return (1, x[0]) if len(x) == 1 else (x[0], x[1])


def post_transform(n: Node, rows, outputs) -> Cost:
    """The standard op a post_transform names, over the [rows, outputs] scores."""
    scores = TensorInfo("", 1, (rows, outputs))
    name = n.attr("post_transform", "NONE")
    if name in ("SOFTMAX", "SOFTMAX_ZERO"):
        return n.cost_of("Softmax", [scores], [scores], axis=-1)
    if name == "LOGISTIC":
        return n.cost_of("Sigmoid", [scores], [scores])
    if name == "PROBIT":  # the inverse normal CDF counted as one operation
        return Cost(flops=rows * outputs)
    return ZERO


def linear(n: Node, outputs) -> Cost:
    rows, features = rows_and_features(n)
    intercepts = rows * outputs if n.attr("intercepts") else 0
    return Cost(macs=rows * outputs * features, dot_products=rows * outputs, flops=intercepts)


@ml_rule("LinearRegressor", category=CONTRACTION)
def linear_regressor(n: Node) -> Cost:
    """MACs = N·T·C (T targets over C features); +N·T intercept adds; + the post transform"""
    targets = n.attr("targets", 1)
    return linear(n, targets) + post_transform(n, rows_and_features(n)[0], targets)


@ml_rule("LinearClassifier", category=CONTRACTION)
def linear_classifier(n: Node) -> Cost:
    """MACs = N·E·C (E scores, C features); +N·E intercepts; the post transform; N·(E − 1) argmax"""
    rows, features = rows_and_features(n)
    scores = len(n.attr("coefficients")) // features
    label = Cost(flops=rows * max(scores - 1, 1))
    return linear(n, scores) + post_transform(n, rows, scores) + label


def svm_kernel(n: Node, rows, vectors, features) -> Cost:
    """One kernel value per (sample, support vector): a dot product, or a distance for RBF."""
    kernel = n.attr("kernel_type", "LINEAR")
    pairs = rows * vectors
    extra = {"LINEAR": 0, "POLY": 3, "SIGMOID": 3, "RBF": 2 + features}[kernel]
    return Cost(macs=pairs * features, dot_products=pairs, flops=pairs * extra)


@ml_rule("SVMRegressor", category=CLASSICAL_ML)
def svm_regressor(n: Node) -> Cost:
    """N·SV kernels of C MACs (RBF +C + 2, POLY/SIGMOID +3 FLOPs), N·SV weighting MACs, +N rho"""
    rows, features = rows_and_features(n)
    vectors = n.attr("n_supports", 0)
    if not vectors:  # a linear model: coefficients are the weights
        return Cost(macs=rows * features, dot_products=rows, flops=rows)
    return (svm_kernel(n, rows, vectors, features)
            + Cost(macs=rows * vectors, dot_products=rows, flops=rows)
            + post_transform(n, rows, 1))


@ml_rule("SVMClassifier", category=CLASSICAL_ML)
def svm_classifier(n: Node) -> Cost:
    """N·SV kernels as SVMRegressor, N·|coefficients| MACs, N·(decisions + classes) votes"""
    rows, features = rows_and_features(n)
    classes = len(n.attr("classlabels_ints") or n.attr("classlabels_strings") or [])
    vectors = len(n.attr("support_vectors") or []) // features
    coefficients = len(n.attr("coefficients") or [])
    decisions = len(n.attr("rho") or []) or classes
    if not vectors:  # linear: one weight vector per class
        kernels = Cost(macs=rows * coefficients, dot_products=rows * decisions)
    else:
        kernels = svm_kernel(n, rows, vectors, features) + Cost(
            macs=rows * coefficients, dot_products=rows * decisions)
    votes = Cost(flops=rows * (decisions + classes))  # +rho per decision, then the argmax
    return kernels + votes + post_transform(n, rows, classes)


def tree_depths(roots, true_ids, false_ids, is_leaf) -> list[int]:
    """The number of branch nodes on the deepest path of each tree."""
    depths = []
    for root in roots:
        deepest, stack, seen = 0, [(root, 1)], set()
        while stack:
            node, depth = stack.pop()
            if node in seen:
                raise Uncostable(f"the tree rooted at node {root} is not a tree (node {node} is "
                                 "reached twice)")
            seen.add(node)
            deepest = max(deepest, depth)
            for child, leaf in ((true_ids[node], is_leaf(node, True)),
                                (false_ids[node], is_leaf(node, False))):
                if not leaf:
                    stack.append((child, depth + 1))
        depths.append(deepest)
    return depths


def legacy_tree_depths(n: Node) -> list[int]:
    """Depths from TreeEnsembleClassifier/Regressor's (tree id, node id) attributes."""
    trees, ids = n.attr("nodes_treeids"), n.attr("nodes_nodeids")
    is_branch = [mode != b"LEAF" for mode in n.attr("nodes_modes")]  # strings come as bytes
    index = {(t, i): k for k, (t, i) in enumerate(zip(trees, ids))}
    # A leaf's child ids are meaningless: they are never followed.
    true_ids = [index.get((t, c), 0) for t, c in zip(trees, n.attr("nodes_truenodeids"))]
    false_ids = [index.get((t, c), 0) for t, c in zip(trees, n.attr("nodes_falsenodeids"))]
    roots = [index[(t, min(i for tt, i in zip(trees, ids) if tt == t))] for t in set(trees)]
    leaf_roots = [r for r in roots if not is_branch[r]]
    children = {True: true_ids, False: false_ids}
    return [0] * len(leaf_roots) + tree_depths(
        [r for r in roots if is_branch[r]], true_ids, false_ids,
        lambda node, side: not is_branch[children[side][node]])


def ensemble_cost(n: Node, depths: list[int], targets) -> Cost:
    rows = rows_and_features(n)[0]
    trees = len(depths)
    return Cost(flops=rows * (sum(depths) + trees * targets)) + post_transform(n, rows, targets)


@ml_rule(["TreeEnsembleClassifier", "TreeEnsembleRegressor"], category=CLASSICAL_ML)
def legacy_tree_ensemble(n: Node) -> Cost:
    """estimate: N·(Σ deepest path per tree + trees·targets leaf adds) + the post transform"""
    labels = n.attr("classlabels_int64s") or n.attr("classlabels_strings")
    targets = len(labels) if labels else n.attr("n_targets", 1)
    return ensemble_cost(n, legacy_tree_depths(n), targets)


@ml_rule("TreeEnsemble", category=CLASSICAL_ML)
def tree_ensemble(n: Node) -> Cost:
    """estimate: N·(Σ deepest path per tree + trees·targets leaf adds) + the post transform"""
    true_leaf, false_leaf = n.attr("nodes_trueleafs"), n.attr("nodes_falseleafs")
    depths = tree_depths(n.attr("tree_roots"), n.attr("nodes_truenodeids"),
                         n.attr("nodes_falsenodeids"),
                         lambda node, side: bool((true_leaf if side else false_leaf)[node]))
    return ensemble_cost(n, depths, n.attr("n_targets"))


@ml_rule("Normalizer", category=CLASSICAL_ML)
def normalizer(n: Node) -> Cost:
    """per row of C: MAX 2C − 1 (max, divide), L1 3C − 1 (abs, sum, divide), L2 3C (+ sqrt)"""
    rows, features = rows_and_features(n)
    per_row = {"MAX": 2 * features - 1, "L1": 3 * features - 1, "L2": 3 * features}
    return Cost(flops=rows * per_row[n.attr("norm", "MAX")])


@ml_rule("Scaler", category=CLASSICAL_ML)
def scaler(n: Node) -> Cost:
    """2·numel(X): (x − offset)·scale"""
    return Cost(flops=2 * n.input(0).numel)


@ml_rule(["Binarizer", "Imputer"], category=CLASSICAL_ML)
def compare_each(n: Node) -> Cost:
    """numel(X) comparisons (with the threshold, or with the value to replace)"""
    x = n.input(0)
    return Cost(flops=x.numel) if x.is_float else Cost(int_ops=x.numel)


@ml_rule(["LabelEncoder", "CategoryMapper"], category=CLASSICAL_ML)
def lookup(n: Node) -> Cost:
    """numel(X) int ops: one table lookup per element"""
    return Cost(int_ops=n.input(0).numel)


@ml_rule(["OneHotEncoder", "ZipMap", "ArrayFeatureExtractor", "FeatureVectorizer",
          "DictVectorizer", "CastMap"], category=DATA_MOVEMENT)
def ml_data_movement(n: Node) -> Cost:
    """0: selects, scatters or re-packs values"""
    return ZERO
