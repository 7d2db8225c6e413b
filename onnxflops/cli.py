"""The `onnxflops` command line. Each subcommand lives in onnxflops/commands/."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import traceback
import warnings

from onnxflops.caches import collector_paused
from onnxflops.errors import OnnxFlopsError, UncostedWarning, first_line, on_command_line

COMMANDS = ("count", "convert", "compare", "ops", "profile", "report", "llm", "survey")
# Exit codes: 0 counted; 1 counted, some nodes uncosted (or compare: the counts differ); 2 bad
# input, said in one line; 3 a bug in onnxflops, said in one line (the traceback with --debug).
EXIT_BAD_INPUT, EXIT_BUG = 2, 3
# Commands that keep Python's cyclic collector on: the survey's parent lives for hours; every
# other command works on one model and ends (see `run`).
_COLLECTED_THROUGHOUT = frozenset({"survey"})


class _Parser(argparse.ArgumentParser):
    """Option errors are one line, as every other bad input is (the usage is under --help)."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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


def parser(commands: tuple[str, ...] = COMMANDS) -> tuple[argparse.ArgumentParser, dict]:
    """The `onnxflops` parser with these commands registered, and each command's own parser
    (the documentation's CLI reference is made from them)."""
    top = _Parser(
        prog="onnxflops",
        description="Count FLOPs, MACs, params and memory traffic of a neural network, "
                    "the same whichever framework it came from.")
    top.add_argument("--version", action=_PrintVersion, nargs=0,
                     help="print the installed version and exit")
    top.add_argument("--debug", action="store_true",
                     help="print the rest of an error: a failed conversion's every exporter "
                          "message and traceback, an internal error's traceback (also "
                          "ONNXFLOPS_DEBUG=1)")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in commands:
        importlib.import_module(f"onnxflops.commands.{name}").register(sub)
    return top, sub.choices


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # --debug is taken wherever it stands, before the command or among its options.
    debug = "--debug" in argv or os.environ.get("ONNXFLOPS_DEBUG", "") not in ("", "0")
    argv = [a for a in argv if a != "--debug"]
    # The command being run is the only one registered: building every parser costs milliseconds
    # at each start. All are, to list them (--help, no command, an unknown one).
    top, _ = parser((argv[0],) if argv and argv[0] in COMMANDS else COMMANDS)
    from onnxflops.commands.common import model_after_format

    args = top.parse_args(model_after_format(argv))
    warnings.showwarning = _show_warning
    # The report lists its uncosted nodes and the exit status says so: no second telling.
    warnings.simplefilter("ignore", UncostedWarning)
    try:
        with on_command_line():
            return args.func(args) or 0
    except OnnxFlopsError as e:
        if debug and e.details:
            print(e.details, file=sys.stderr)
        print(f"onnxflops: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("onnxflops: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped early (| head)
        return 0
    except OSError as e:
        if not is_environment_fault(e):
            return _internal_error(e, debug)
        print(f"onnxflops: error: {_fault_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (Exception, SystemExit) as e:  # noqa: BLE001 - a bug: one line, not 1 ("uncosted")
        return _internal_error(e, debug)


def _internal_error(e: BaseException, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    what = "ran out of memory" if isinstance(e, MemoryError) else \
        f"{type(e).__name__}: {first_line(e)}"
    print(f"onnxflops: internal error, a bug in onnxflops {version()} ({what}); "
          + ("" if debug else "rerun with --debug for the traceback, and ")
          + "please report it", file=sys.stderr)
    return EXIT_BUG


# What the system says of a path the user gave or set (a file, an output, ONNXFLOPS_CACHE_DIR):
# the place, not onnxflops, is at fault.
_ENVIRONMENT_ERRNOS = frozenset(getattr(errno, n) for n in (
    "ENAMETOOLONG", "ENOENT", "ENOTDIR", "EISDIR", "EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT",
    "ELOOP", "EEXIST", "EFBIG", "EMFILE", "ENFILE", "ENXIO", "ETXTBSY") if hasattr(errno, n))


def is_environment_fault(e: OSError) -> bool:
    return e.errno in _ENVIRONMENT_ERRNOS


def _fault_line(e: OSError) -> str:
    where = e.filename if isinstance(e.filename, str) else ""
    if len(where) > 200:
        where = f"{where[:100]}...{where[-60:]} ({len(where)} characters)"
    cache = os.environ.get("ONNXFLOPS_CACHE_DIR")
    if where and cache and where.startswith(cache):
        where = f"{where} (in ONNXFLOPS_CACHE_DIR)"
    return f"{where}: {e.strerror}" if where else (e.strerror or first_line(e))


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"onnxflops: warning: {message}", file=sys.stderr)


def run() -> None:
    """The console script: `main`, then end the process as soon as its output is out.

    Tearing the interpreter down would free a large graph's objects one by one, which takes
    longer than some whole counts; nothing needs cleaning up once the output is written. A
    command on one model runs with the cyclic collector paused.
    """
    argv = sys.argv[1:]
    if argv and argv[0] in _COLLECTED_THROUGHOUT:
        code = main(argv)
    else:
        # The objects a framework and its model make live until the process ends, and the
        # collector would walk them again and again to free nothing (a seventh of the CPU time of
        # counting a torch model, most of it while torch's exporter imports).
        with collector_paused():
            code = main(argv)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # a reader that stopped early (| head): the normal exit reports it
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
