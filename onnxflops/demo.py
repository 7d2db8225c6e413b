"""The headline, live: one model written in Keras and in PyTorch, counted the same by onnxflops,
next to what TensorFlow's own profiler and torch's FlopCounterMode say about it.

    python -m onnxflops.demo

The model is the one from a forum thread whose author could not explain why TensorFlow and
PyTorch disagreed: Conv2D(32, 4×4, strides (1, 2)) → GRU(96) → Dense(256) on a 1×1×100×256 input.
"""

from __future__ import annotations

import sys

from onnxflops.comparison import compare
from onnxflops.dims import format_shape
from onnxflops.results import Report, human, text_table

PAIR = "seed003_conv_gru_dense"
INPUT = (1, 1, 100, 256)


def main() -> int:
    from onnxflops.converters import keras_to_onnx, torch_to_onnx
    from onnxflops.models import pair

    p = pair(PAIR)
    keras_model, module, example = p.keras_model(), p.torch_module(), p.torch_example()
    print(f"{p.description}\n{PAIR}: input {format_shape(INPUT)}, written once in Keras "
          "and once in PyTorch (models/)\n")
    frameworks = compare(keras_to_onnx(keras_model), torch_to_onnx(module, example))
    exporters = compare(torch_to_onnx(module, example, exporter="legacy"),
                        torch_to_onnx(module, example))
    profiled, per_op = tensorflow_profiler_flops(keras_model, INPUT)
    rows = [_counted("onnxflops, from Keras (tf2onnx)", frameworks.a),
            _counted("onnxflops, from PyTorch (torch.export)", frameworks.b),
            _counted("onnxflops, from PyTorch (TorchScript)", exporters.a),
            ["TensorFlow profiler (tf.compat.v1, live)", "-", human(profiled), "-",
             "counts " + ", ".join(f"{op} {human(v)}" for op, v in per_op.items())],
            ["torch FlopCounterMode (live)", "-", human(flop_counter_mode_flops(module, example)),
             "-", "contractions only: 2·MACs"]]
    print("\n".join(text_table(["", "MACs", "FLOPs", "params", ""], rows, left=1, note=True)))
    print("\nper layer, Keras vs PyTorch, in execution order:")
    print("\n".join(text_table(
        ["Keras layer", "PyTorch module", "MACs Keras", "MACs PyTorch", "params Keras",
         "params PyTorch", ""],
        [[_names(r.a), _names(r.b), human(_sum(r.a, "macs")), human(_sum(r.b, "macs")),
          human(_sum(r.a, "params")), human(_sum(r.b, "params")), r.status]
         for r in frameworks.layers], note=True)))
    gru = next(n for n in frameworks.a.nodes if n.op_type == "Loop")
    print(f"\nThe GRU runs {gru.detail['trip_count']} steps (the conv leaves 97 rows, not 100): "
          f"{human(gru.macs)} MACs. TensorFlow's profiler counts the GRU's loop body once, as "
          "if it ran one step, and skips its recurrent matmul, whose input shape it cannot see: "
          "hence about 20 M FLOPs.")
    same = frameworks.same and exporters.same
    print("Keras and PyTorch (both exporters) agree on MACs, FLOPs and params." if same else
          "DIFFERENT:\n" + "\n".join(frameworks.differences + exporters.differences))
    return 0 if same else 1


def tensorflow_profiler_flops(model, shape) -> tuple[int, dict[str, int]]:
    """What tf.compat.v1.profiler reports for the Keras model's graph (as users of TF 1 ran it).

    Keras 3 builds no TF1 graph itself: the model is traced with tf.function, its variables frozen
    and its control flow lowered to the TF1 while-loop ops the profiler was written for.
    """
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    tf.get_logger().setLevel("ERROR")  # the v1 profiler's own deprecation notices

    traced = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec(shape, tf.float32))
    graph = convert_variables_to_constants_v2(traced, lower_control_flow=True).graph
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    profile = tf.compat.v1.profiler.profile(graph=graph, run_meta=tf.compat.v1.RunMetadata(),
                                            cmd="op", options=options)
    per_op, node = {}, profile
    while node.children:  # the "op" view nests each op type under the previous one
        node = node.children[0]
        per_op[node.name] = node.float_ops
    return profile.total_float_ops, per_op


def flop_counter_mode_flops(module, inputs: tuple) -> int:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.enable_grad(), FlopCounterMode(display=False) as counter:
        module(*inputs)
    return counter.get_total_flops()


def _counted(label: str, report: Report) -> list[str]:
    t = report.total
    return [label, human(t.macs), human(t.flops), human(t.params), ""]


def _names(layers) -> str:
    return "+".join(x.name for x in layers) or "-"


def _sum(layers, key: str):
    return sum(getattr(x.totals, key) for x in layers)


if __name__ == "__main__":
    sys.exit(main())
