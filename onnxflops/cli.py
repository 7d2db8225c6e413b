"""The `onnxflops` command line. Each subcommand lives in onnxflops/commands/."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from onnxflops.errors import OnnxFlopsError, UncostedWarning

COMMANDS = ("count", "convert", "compare", "ops", "profile", "report", "llm")


def version() -> str:
    """The installed distribution's version; the package's own where it is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version
    try:
        return installed_version("onnxflops")
    except PackageNotFoundError:  # run from a source tree that pip never installed
        from onnxflops import __version__
        return __version__


class _PrintVersion(argparse.Action):
    """`--version`, looked up only when asked for: importlib.metadata would slow every start."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"onnxflops {version()}")
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="onnxflops",
        description="Count FLOPs, MACs, params and memory traffic of a neural network, "
                    "the same whichever framework it came from.")
    parser.add_argument("--version", action=_PrintVersion, nargs=0,
                        help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    argv = sys.argv[1:] if argv is None else argv
    # The command being run is the only one registered: building every parser costs milliseconds
    # at each start. All are, to list them (--help, no command, an unknown one).
    for name in [argv[0]] if argv and argv[0] in COMMANDS else COMMANDS:
        importlib.import_module(f"onnxflops.commands.{name}").register(sub)
    args = parser.parse_args(argv)
    warnings.showwarning = _show_warning
    # The report lists its uncosted nodes and the exit status says so: no second telling.
    warnings.simplefilter("ignore", UncostedWarning)
    try:
        return args.func(args) or 0
    except OnnxFlopsError as e:
        print(f"onnxflops: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("onnxflops: interrupted", file=sys.stderr)
        return 130


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"onnxflops: warning: {message}", file=sys.stderr)


def run() -> None:
    """The console script: `main`, then end the process as soon as its output is out.

    Tearing the interpreter down would free a large graph's objects one by one, which takes
    longer than some whole counts; nothing needs cleaning up once the output is written.
    """
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # a reader that stopped early (| head): the normal exit reports it
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
