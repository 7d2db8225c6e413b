"""The `onnxflops` command line. Each subcommand lives in onnxflops/commands/."""

from __future__ import annotations

import argparse
import importlib
import sys

from onnxflops.errors import OnnxFlopsError

COMMANDS = ("count", "convert", "compare", "ops", "profile", "report")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="onnxflops",
        description="Count FLOPs, MACs, params and memory traffic of a neural network, "
                    "the same whichever framework it came from.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"onnxflops.commands.{name}").register(sub)
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except OnnxFlopsError as e:
        print(f"onnxflops: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("onnxflops: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
