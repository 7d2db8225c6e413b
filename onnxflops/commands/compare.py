"""`onnxflops compare`: two models side by side; exit status 1 when they differ."""

from __future__ import annotations

import argparse

from onnxflops.commands.common import (
    add_command,
    add_graph_option,
    check_output_options,
    input_shapes,
    model_sources,
    print_result,
    shapes_of,
)


def register(sub) -> None:
    p = add_command(
        sub, "compare", "compare the cost of two models (a port, two exporters)",
        "Compare two models: totals, per op type, and per layer aligned in execution order, "
        "flagging missing or extra layers, shape mismatches and param differences. Exit status 1 "
        "when they differ beyond --tolerance.", model=None, inputs=True, conversion=True,
        convention=True, rows="pair of aligned layers")
    p.add_argument("a", help=f"first model: {model_sources()}")
    p.add_argument("b", help="second model, likewise")
    for side in ("a", "b"):
        p.add_argument(f"--input-{side}", action="append", default=[], metavar="NAME=DIMS",
                       help=f"bind an input of model {side} only (repeatable)")
    p.add_argument("--tolerance", type=float, default=0.0,
                   help="relative difference allowed in MACs, FLOPs, params, buffers (default 0)")
    p.add_argument("--check-outputs", action="store_true",
                   help="run both under onnxruntime on the same random inputs and report the "
                        "largest output error (for ports whose weights were copied)")
    add_graph_option(p)
    p.add_argument("--output-tolerance", type=float, default=1e-4,
                   help="largest relative output error accepted by --check-outputs")
    p.add_argument("--layout", choices=["auto", "none"], default="auto",
                   help="auto: feed and compare NHWC against NCHW by transposing where the two "
                        "models' shapes differ just so")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from onnxflops.comparison import compare

    check_output_options(args)
    result = compare(
        args.a, args.b, input_shapes(args) or None, args.tolerance,
        inputs_a=_bindings(args.input_a, "--input-a"),
        inputs_b=_bindings(args.input_b, "--input-b"), batch=args.batch,
        convention=args.convention, exporter=args.exporter, check_outputs=args.check_outputs,
        output_tolerance=args.output_tolerance, layout=args.layout, unsafe=args.unsafe,
        graph=args.graph)
    print_result(result, args)
    return 0 if result.same else 1


def _bindings(specs: list[str], option: str) -> dict[str, tuple[int, ...]] | None:
    return shapes_of(specs, option) or None
