"""Is the probed peak above ResNet-50's convolutions? Each distinct convolution of ResNet-50
(bench/models.py) runs alone in onnxruntime as the model runs it (its weight and bias stored in
the model, a Relu after it where the model has one, fused by onnxruntime into its NCHWc
convolution), the best of many runs, against the compute peak `profile` uses, probed in the
same process (onnxflops/profiling/ceilings.py). The best of many runs of each side is compared,
so other work on the machine lowers both alike. Ends PASS where no convolution ran faster than
the peak. About 30 s.

    nice -n 10 python bench/peak_vs_convs.py [--threads 1] [--seconds 0.2]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]


def distinct_convs(model) -> dict[tuple, tuple[list[int], list[int], int, bool]]:
    """(input shape, weight shape, stride, Relu after it) of each distinct convolution."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: [1] + [d.dim_value for d in v.type.tensor_type.shape.dim][1:]  # batch 1
              for v in list(inferred.graph.value_info) + list(inferred.graph.input)}
    weights = {t.name: list(t.dims) for t in model.graph.initializer}
    # a Conv's output goes through its BatchNormalization (folded by onnxruntime) to a Relu
    followed = {n.input[0]: n for n in model.graph.node}
    convs = {}
    for n in model.graph.node:
        if n.op_type != "Conv":
            continue
        stride = next(a.ints[0] for a in n.attribute if a.name == "strides")
        bn = followed.get(n.output[0])
        relu = bn is not None and followed.get(bn.output[0], bn).op_type == "Relu"
        key = (tuple(shapes[n.input[0]]), tuple(weights[n.input[1]]), stride, relu)
        convs[key] = (shapes[n.input[0]], weights[n.input[1]], stride, relu)
    return convs


def conv_model(x: list[int], w: list[int], stride: int, relu: bool) -> tuple[bytes, list, float]:
    """The convolution alone, weight and bias stored: (model, fed input and output shapes,
    FLOPs = 2·MACs)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    k, side = w[2], (x[2] + 2 * (w[2] // 2) - w[2]) // stride + 1
    y = [1, w[0], side, side]
    rng = np.random.default_rng(0)
    stored = [numpy_helper.from_array(rng.standard_normal(w).astype(np.float32) * 0.05, "x1"),
              numpy_helper.from_array(np.zeros(w[0], np.float32), "x2")]
    nodes = [helper.make_node("Conv", ["x0", "x1", "x2"], ["c" if relu else "y"],
                              pads=[k // 2] * 4, strides=[stride] * 2)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, x)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)], stored)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString(), [x, w, [w[0]], y], 2.0 * w[0] * w[1] * k * k * side * side


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=0.2, help="timed per convolution")
    args = parser.parse_args()

    import models
    from onnxflops.profiling import ceilings
    from onnxflops.profiling.runtime import SessionConfig

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus, "
          f"{args.threads} thread(s)")
    config = SessionConfig("cpu", args.threads)
    peak = ceilings.measure(config).peak_flops_per_s
    rates = []
    for x, w, stride, relu in distinct_convs(models.resnet50(models.Weights("inline", "-"))).values():
        model, shapes, flops = conv_model(x, w, stride, relu)
        seconds = ceilings._best_time(model, config, shapes, "float32", 10, args.seconds)
        label = f"{w[1]}->{w[0]} {w[2]}x{w[3]} /{stride} on {x[2]}x{x[3]}{' +Relu' if relu else ''}"
        rates.append((flops / seconds, label))
    peak = max(peak, ceilings.measure(config).peak_flops_per_s)  # probed again after: the best
    rates.sort(reverse=True)
    print(f"peak probed (best of two probes): {peak / 1e9:.1f} GFLOP/s; "
          f"{len(rates)} distinct convolutions, the fastest:")
    for rate, label in rates[:8]:
        print(f"  {label:<36}{rate / 1e9:>8.1f} GFLOP/s  {100 * rate / peak:6.1f}% of the peak")
    above = [label for rate, label in rates if rate > peak]
    print(f"load average {os.getloadavg()[0]:.2f} after")
    print("PASS: no convolution faster than the peak" if not above else
          f"FAIL: {len(above)} convolution(s) faster than the peak")
    return 0 if not above else 1


if __name__ == "__main__":
    sys.exit(main())
