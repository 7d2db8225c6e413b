"""`onnxflops convert`: a Keras or PyTorch model (file or factory spec) to an .onnx file."""

from __future__ import annotations

import argparse
import sys

import onnx

from onnxflops.commands.common import add_command, check_output_path, input_shapes, model_sources
from onnxflops.errors import OnnxFlopsError


def register(sub) -> None:
    p = add_command(
        sub, "convert", "convert a Keras or PyTorch model to ONNX",
        "Convert any MODEL kind below that is not ONNX already to ONNX. Files load without "
        "running stored code (Keras "
        "safe_mode, weights-only unpickling; pickled .pt files are refused).",
        model=model_sources(converted_only=True),
        inputs=True, conversion=True)
    p.add_argument("--output", "-o", required=True, help="the .onnx file to write")
    p.add_argument("--stand-in-weights", action="store_true",
                   help="write the graph onnxflops counts: weights replaced by distinct stand-in "
                        "values, so that no exporter simplification depends on them")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from onnxflops.sources import (
        absent_weights_file,
        is_graph_only,
        load,
        needs_conversion,
        to_onnx,
    )

    if not needs_conversion(args.model):
        raise OnnxFlopsError(f"{args.model}: already ONNX (or not a model onnxflops converts)")
    check_output_path(args.output, "--output")
    model = load(args.model, unsafe=args.unsafe)
    options = dict(batch=args.batch, exporter=args.exporter)
    proto = to_onnx(model, input_shapes(args) or None, keep_weights=not args.stand_in_weights,
                    **options).counted
    onnx.save(proto, args.output)
    print(f"wrote {args.output}")
    if is_graph_only(proto):
        print(f"note: the weights have no data (meta device): {args.output} holds the graph only, "
              f"its initializers name an external file '{absent_weights_file()}' that is not "
              "written", file=sys.stderr)
    elif not args.stand_in_weights:
        _warn_if_weights_shaped_the_graph(model, proto, input_shapes(args) or None, options)
    return 0


def _warn_if_weights_shaped_the_graph(model, proto: onnx.ModelProto, inputs, options) -> None:
    """Exporters drop zero biases or fold BatchNorm by value: say so when the file counts less."""
    from onnxflops.api import count
    from onnxflops.sources import to_onnx

    written = count(proto).total
    architecture = count(to_onnx(model, inputs, **options).counted).total
    if (written.macs, written.flops, written.params) != (architecture.macs, architecture.flops,
                                                         architecture.params):
        print(f"note: with these weights the exporter simplified the graph: the file counts "
              f"{written.flops} FLOPs and {written.params} params, the architecture "
              f"{architecture.flops} FLOPs and {architecture.params} params. Count the source "
              "model itself, or write the counted graph with --stand-in-weights.", file=sys.stderr)
