"""A count that leaves nodes uncosted says so loudly from Python: a warning, `complete`, `strict`."""

import warnings

import numpy as np
import onnx
import pytest
from onnx import helper

import onnxflops


def _half_known_model() -> onnx.ModelProto:
    """A 4×8 · 8×2 MatMul (64 MACs) and an op of a custom domain that no rule knows."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
             helper.make_node("Mystery", ["y"], ["z"], domain="example.custom", name="m1")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [4, 2])],
        [onnx.numpy_helper.from_array(np.ones((8, 2), np.float32), name="w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("example.custom", 1)])


def test_an_incomplete_count_warns_naming_the_nodes():
    with pytest.warns(onnxflops.UncostedWarning, match=r"1 node\(s\) uncosted.*'m1' \(Mystery"):
        report = onnxflops.count(_half_known_model())
    assert not report.complete
    assert report.total.macs == 64


def test_strict_raises_on_an_incomplete_count():
    with pytest.raises(onnxflops.OnnxFlopsError, match="'m1' \\(Mystery: no cost rule"):
        onnxflops.count(_half_known_model(), strict=True)


def test_a_complete_count_is_quiet():
    model = _half_known_model()
    del model.graph.node[1:]
    model.graph.output[0].name = "y"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = onnxflops.count(model, strict=True)
    assert report.complete and report.total.macs == 64
