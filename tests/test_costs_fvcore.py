"""`--convention fvcore`: each of fvcore's per-op figures on a tiny graph, derived by hand from
its handles (fvcore/nn/jit_handles.py: one flop per multiply-add, fixed per-element terms).

tests/frameworks/test_fvcore.py compares whole models with fvcore itself.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

import onnxflops
from helpers import model, node, weight
from onnxflops.cli import main
from onnxflops.costs import REGISTRY


def fvcore_flops(op_node, inputs, weights=(), opset=17, **kw) -> int:
    report = onnxflops.count(model([op_node], inputs, weights, opset=opset, **kw),
                             convention="fvcore")
    assert not report.uncosted, report.uncosted
    (entry,) = report.nodes
    return entry.flops


def test_conv_is_its_macs_without_the_bias():
    # N·prod(W)·prod(Y spatial) = 2·(6·4·3·3)·(6·6): the bias add is not counted
    conv = node("Conv", ["x", "w", "b"], ["y"])
    assert fvcore_flops(conv, {"x": [2, 4, 8, 8]}, [weight("w", (6, 4, 3, 3)),
                                                    weight("b", (6,))]) == 2 * 216 * 36


def test_grouped_conv_is_its_macs():
    # groups 2: W is 6×2×3×3; 1·(6·2·9)·(6·6)
    conv = node("Conv", ["x", "w"], ["y"], group=2)
    assert fvcore_flops(conv, {"x": [1, 4, 8, 8]}, [weight("w", (6, 2, 3, 3))]) == 108 * 36


def test_conv_transpose_counts_over_the_input_grid():
    # N·prod(W)·prod(X spatial) = 1·(4·6·3·3)·(5·5)
    op = node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])
    assert fvcore_flops(op, {"x": [1, 4, 5, 5]}, [weight("w", (4, 6, 3, 3))]) == 216 * 25


def test_gemm_is_m_k_n_without_the_bias():
    op = node("Gemm", ["x", "w", "b"], ["y"], transB=1)
    assert fvcore_flops(op, {"x": [3, 8]}, [weight("w", (5, 8)), weight("b", (5,))]) == 3 * 8 * 5


def test_matmul_is_prod_a_times_the_last_dim_of_b():
    # batched: [2, 4, 3, 8] @ [2, 4, 8, 5]: 2·4·3·8·5
    op = node("MatMul", ["a", "b"], ["y"])
    assert fvcore_flops(op, {"a": [2, 4, 3, 8], "b": [2, 4, 8, 5]}) == 2 * 4 * 3 * 8 * 5


def test_einsum_special_case_and_the_numpy_path():
    # "bij,bjk->bik" renames to "abc,acd->abd": no special case; numpy's path: 2·(2·3·4·5)
    # (a multiply and an add per term of the contraction), halved.
    op = node("Einsum", ["a", "b"], ["y"], equation="bij,bjk->bik")
    assert fvcore_flops(op, {"a": [2, 3, 4], "b": [2, 4, 5]}, opset=17) == 2 * 3 * 4 * 5
    # fvcore's special case "abc,abd->acd": n·c·t·p = 2·3·4·5
    op = node("Einsum", ["a", "b"], ["y"], equation="nct,ncp->ntp")
    assert fvcore_flops(op, {"a": [2, 3, 4], "b": [2, 3, 5]}) == 2 * 3 * 4 * 5


def test_batch_norm_is_two_per_element_in_eval_five_in_training():
    x = {"x": [2, 3, 4, 4]}
    stats = [weight(n, (3,)) for n in ("s", "b", "m", "v")]
    eval_bn = node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
    assert fvcore_flops(eval_bn, x, stats) == 2 * 96
    # In training mode the op gives the running mean and variance too (its schema asks 3 outputs).
    train_bn = node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                    training_mode=1)
    report = onnxflops.count(model([train_bn], x, stats), convention="fvcore")
    assert report.nodes[0].flops == 5 * 96


@pytest.mark.parametrize("op,attrs,weights", [
    ("LayerNormalization", {"axis": -1}, [weight("s", (8,)), weight("b", (8,))]),
    ("GroupNormalization", {"num_groups": 2}, [weight("s", (4,)), weight("b", (4,))]),
    ("InstanceNormalization", {}, [weight("s", (4,)), weight("b", (4,))])])
def test_layer_group_and_instance_norm_are_five_per_element(op, attrs, weights):
    # X 2×4×2×8 = 128 elements, 5 each
    n = node(op, ["x", "s", "b"], ["y"], **attrs)
    assert fvcore_flops(n, {"x": [2, 4, 2, 8]}, weights, opset=21) == 5 * 128


@pytest.mark.parametrize("mode,per_output", [("nearest", 1), ("linear", 4), ("cubic", 0)])
def test_upsampling_2d(mode, per_output):
    # Y 1×2×8×8 = 128 elements: nearest 1 each, bilinear 4 each, bicubic none (fvcore has none)
    scales = weight("scales", None, value=[1, 1, 2, 2])
    op = node("Resize", ["x", "", "scales"], ["y"], mode=mode)
    assert fvcore_flops(op, {"x": [1, 2, 4, 4]}, [scales]) == per_output * 128


def test_adaptive_average_pooling_is_one_per_input_element():
    # 1×8×7×7 = 392 inputs, as GlobalAveragePool or as ReduceMean over axes 2, 3 kept
    assert fvcore_flops(node("GlobalAveragePool", ["x"], ["y"]), {"x": [1, 8, 7, 7]}) == 392
    axes = weight("axes", None, np.int64, value=[2, 3])
    mean = node("ReduceMean", ["x", "axes"], ["y"], keepdims=1)
    assert fvcore_flops(mean, {"x": [1, 8, 7, 7]}, [axes], opset=18) == 392
    # A mean over tokens (timm's global pool) is aten::mean, which fvcore does not count.
    tokens = weight("axes", None, np.int64, value=[1])
    mean = node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)
    assert fvcore_flops(mean, {"x": [1, 197, 64]}, [tokens], opset=18) == 0


def test_grid_sample_is_four_per_output():
    # Y 1×3×5×6 = 90 outputs, 4 each (fvcore assumes bilinear)
    op = node("GridSample", ["x", "g"], ["y"])
    assert fvcore_flops(op, {"x": [1, 3, 8, 8], "g": [1, 5, 6, 2]}, opset=16) == 4 * 90


def test_ops_outside_fvcores_table_count_nothing_but_keep_their_macs():
    # Relu and Add: fvcore skips them; MACs stay the model's, whatever the convention.
    nodes = [node("MatMul", ["x", "w"], ["h"]), node("Relu", ["h"], ["r"]),
             node("Add", ["r", "r"], ["y"])]
    report = onnxflops.count(model(nodes, {"x": [2, 8]}, [weight("w", (8, 4))]),
                             convention="fvcore")
    assert [e.flops for e in report.nodes] == [2 * 8 * 4, 0, 0]
    assert report.total.macs == 2 * 8 * 4 and report.convention == "fvcore"


def test_fvcore_is_a_forward_convention():
    m = model([node("MatMul", ["x", "w"], ["y"])], {"x": [2, 8]}, [weight("w", (8, 4))])
    with pytest.raises(onnxflops.OnnxFlopsError, match="forward pass only"):
        onnxflops.count(m, convention="fvcore", training=True)


def test_every_fvcore_rule_cites_fvcore():
    cited = {r.op_type: r.convention("fvcore").formula for r in REGISTRY.rules.values()
             if r.convention("fvcore")}
    assert {"Conv", "Gemm", "MatMul", "BatchNormalization", "LayerNormalization", "Resize",
            "GlobalAveragePool", "Einsum"} <= set(cited)
    assert all("fvcore's" in formula for formula in cited.values())


def test_the_command_line_takes_the_convention(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(model([node("MatMul", ["x", "w"], ["h"]), node("Relu", ["h"], ["y"])],
                    {"x": [2, 8]}, [weight("w", (8, 4))]), str(path))
    assert main(["count", str(path), "--convention", "fvcore", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["convention"] == "fvcore" and doc["total"]["flops"] == 2 * 8 * 4
