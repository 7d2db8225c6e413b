"""Write the fuzzer's seed models to tests/fuzz/seeds/: small CNN and MLP exports from both torch
exporters (torch.export based and the TorchScript one), and Loop/If/Scan models built by hand.

Run once when the seeds should change (needs torch and onnxscript); the fuzz tests read the
committed files and need no framework:

    python tools/make_fuzz_seeds.py
"""

from __future__ import annotations

import io
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEEDS = Path(__file__).resolve().parent.parent / "tests" / "fuzz" / "seeds"


def torch_seeds() -> dict[str, onnx.ModelProto]:
    import torch
    from torch import nn

    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, groups=2), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(4, 5), nn.Softmax(-1)).eval()
    mlp = nn.Sequential(nn.Linear(8, 6), nn.GELU(), nn.LayerNorm(6), nn.Linear(6, 3)).eval()
    examples = {"cnn": (cnn, torch.randn(1, 3, 8, 8)), "mlp": (mlp, torch.randn(2, 8))}
    out = {}
    for name, (module, x) in examples.items():
        for exporter, dynamo in (("dynamo", True), ("legacy", False)):
            buffer = io.BytesIO()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kwargs = {"dynamic_shapes": ({0: torch.export.Dim("batch")},)} if dynamo else \
                    {"dynamic_axes": {"x": {0: "batch"}}}
                program = torch.onnx.export(module, (x,), None if dynamo else buffer,
                                            input_names=["x"], dynamo=dynamo, **kwargs)
            proto = program.model_proto if dynamo else onnx.load_from_string(buffer.getvalue())
            out[f"{name}_{exporter}"] = proto
    return out


def _model(graph: onnx.GraphProto, opset: int = 17) -> onnx.ModelProto:
    # IR 8, as an exporter of opset 17 writes it: the core install at its floor (onnx 1.19) reads
    # the seeds too, and refuses an IR newer than it knows (this onnx's default may be).
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="make_fuzz_seeds", ir_version=8)


def loop_seed() -> onnx.ModelProto:
    """A Loop of 4 iterations whose body multiplies the carried state by a weight."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "w"], ["mm"]),
         helper.make_node("Relu", ["mm"], ["h_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, ["batch", 4])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body)],
        "loop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(np.array(4, np.int64), "trip"),
         numpy_helper.from_array(np.array(True), "cond"),
         numpy_helper.from_array(np.ones((4, 4), np.float32), "w")])
    return _model(graph)


def if_seed() -> onnx.ModelProto:
    """An If whose branches are a Conv and an Add, chosen by a graph input."""
    w = numpy_helper.from_array(np.ones((2, 2, 3, 3), np.float32), "w")
    then_branch = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["t"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 2, 6, 6])])
    else_branch = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["e"])],
        "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["batch", 2, 6, 6])])
    graph = helper.make_graph(
        [helper.make_node("If", ["flag"], ["y"], then_branch=then_branch, else_branch=else_branch)],
        "if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 6, 6]),
               helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2, 6, 6])], [w])
    return _model(graph)


def scan_seed() -> onnx.ModelProto:
    """A Scan summing the rows of its scanned input into a carried state (a cumulative sum)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["emit"])],
        "body",
        [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("row", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("emit", TensorProto.FLOAT, [3])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["init", "x"], ["final", "all"], body=body, num_scan_inputs=1)],
        "scan", [helper.make_tensor_value_info("init", TensorProto.FLOAT, [3]),
                 helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("final", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("all", TensorProto.FLOAT, ["batch", 3])])
    return _model(graph)


def main() -> int:
    SEEDS.mkdir(parents=True, exist_ok=True)
    seeds = {"loop": loop_seed(), "if": if_seed(), "scan": scan_seed()}
    for proto in seeds.values():
        onnx.checker.check_model(proto, full_check=True)
    seeds.update(torch_seeds())
    for name, proto in sorted(seeds.items()):
        path = SEEDS / f"{name}.onnx"
        onnx.save(proto, str(path))
        print(f"{path.relative_to(SEEDS.parent.parent.parent)}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
