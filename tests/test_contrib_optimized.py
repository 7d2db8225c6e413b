"""Graphs onnxruntime's optimizers rewrote with com.microsoft fusions count what the originals do."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxflops

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(0)


def totals(report):
    assert not report.uncosted, report.uncosted
    t = report.total
    return t.macs, t.flops, t.int_ops, t.params


def fused_ops(path):
    model = onnx.load(path)
    return collections.Counter(n.op_type for n in model.graph.node if n.domain == "com.microsoft")


def test_session_optimized_cnn_fuses_conv_and_relu(tmp_path):
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], **conv),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], **conv),
             helper.make_node("Add", ["c2", "r1"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    weights = [numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (8, 3, 3, 3)), ("b1", (8,)), ("w2", (8, 8, 3, 3)),
                                   ("b2", (8,)))]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", 1, [1, 3, 12, 12])],
                              [helper.make_tensor_value_info("y", 1, [1, 8, 12, 12])], weights)
    original, optimized = str(tmp_path / "cnn.onnx"), str(tmp_path / "cnn_opt.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              original)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = optimized
    ort.InferenceSession(original, options, providers=["CPUExecutionProvider"])
    assert fused_ops(optimized)["FusedConv"] >= 1
    assert totals(onnxflops.count(optimized)) == totals(onnxflops.count(original))


@pytest.mark.slow
def test_transformer_optimizer_output_counts_as_the_export(tmp_path):
    torch = pytest.importorskip("torch")
    optimizer = pytest.importorskip("onnxruntime.transformers.optimizer")
    d, heads = 32, 4

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
            self.attention = torch.nn.MultiheadAttention(d, heads, batch_first=True)
            self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

        def forward(self, x):
            x = self.norm1(x + self.attention(x, x, x, need_weights=False)[0])
            return self.norm2(x + self.down(torch.nn.functional.gelu(self.up(x))))

    original, optimized = str(tmp_path / "block.onnx"), str(tmp_path / "block_opt.onnx")
    torch.onnx.export(Block().eval(), (torch.randn(2, 8, d),), original, dynamo=False,
                      opset_version=17, input_names=["x"])
    optimizer.optimize_model(original, model_type="bert", num_heads=heads, hidden_size=d,
                             opt_level=1).save_model_to_file(optimized)
    assert fused_ops(optimized)["SkipLayerNormalization"] == 2
    assert totals(onnxflops.count(optimized)) == totals(onnxflops.count(original))
