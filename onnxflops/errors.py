"""Errors a user can act on: each renders as one line naming what is at fault."""

from __future__ import annotations

import contextlib
import contextvars
import re
from typing import Iterable, Iterator, Sequence


class OnnxFlopsError(Exception):
    """A problem with the user's input (file, shape, option), reported as one line by the CLI."""

    def __init__(self, message: str, details: str | None = None):
        # One line whatever names it quotes: a name may hold line breaks.
        super().__init__(str(message).translate(_ESCAPED_LINE_BREAKS))
        # The rest, for whoever asks (the CLI's --debug): a failed conversion's every message
        # and traceback.
        self.details = details


# Every character str.splitlines() breaks at, written as its escape.
_ESCAPED_LINE_BREAKS = str.maketrans({c: ascii(c)[1:-1] for c in
                                      "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


class UncostedWarning(UserWarning):
    """A count left nodes uncosted: its totals are short of the model's work."""


class DataPathWarning(UserWarning):
    """A conversion traced one path of a model that branches or loops on tensor values: its count
    holds for the data it was traced on, not for every input."""


class Uncostable(Exception):
    """Raised by a cost rule when a node cannot be costed; the reason goes to `uncosted`."""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _lines(e: BaseException) -> list[str]:
    return [line.strip() for line in _ANSI.sub("", str(e)).splitlines() if line.strip()]


def first_line(e: BaseException) -> str:
    """The first non-blank line of an exception message: errors from other libraries are
    reported in one line (TensorFlow's traced errors as `traced_error` gives them)."""
    lines = _lines(e)
    if lines and lines[0] == _TRACED:
        return traced_error(lines)
    return lines[0] if lines else type(e).__name__


def last_line(e: BaseException) -> str:
    """The last non-blank line: TensorFlow puts the traced call stack first, the error last
    (a traced error of user code as `traced_error` gives it)."""
    lines = _lines(e)
    if lines and lines[0] == _TRACED:
        return traced_error(lines)
    return lines[-1] if lines else type(e).__name__


_TRACED = "in user code:"  # how TensorFlow opens an error raised while it traced user code
_FRAME = re.compile(r'File "(?:[^"]*/)?([^/"]+)", line (\d+), in (\S+)')


def traced_error(lines: list[str]) -> str:
    """TensorFlow's error raised while tracing user code ("in user code:", the call stack, the
    error, Keras's "Arguments received by" the layer) in one line: where the stack's last frame
    raised it (file:line in function (its code)), then the error's own lines. Its first and
    last lines say neither (SD3's scheduler: "in user code:", "• num_steps=tf.Tensor(...)")."""
    end = next((i for i, line in enumerate(lines) if line.startswith("Arguments received by")),
               len(lines))
    frames = [(i, found) for i, line in enumerate(lines[:end]) if (found := _FRAME.match(line))]
    if not frames:
        return " ".join(lines[1:end]) or lines[0]
    at, frame = frames[-1]
    code = lines[at + 1].rstrip(" *") if at + 1 < end else ""
    where = f"{frame.group(1)}:{frame.group(2)} in {frame.group(3)}" + (f" ({code})" if code else "")
    return f"{where}: {' '.join(lines[at + 2:end])}"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the known name closest to a misspelled one; else ''."""
    import difflib  # only on an error: a count's start-up does without it

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


# Whether the command line is asking: a message that says how to give an input or an option
# speaks the caller's language, flags there (`--input x=1x3x224x224`), Python here
# (`inputs={'x': (1, 3, 224, 224)}`).
_ON_COMMAND_LINE = contextvars.ContextVar("onnxflops_on_command_line", default=False)


@contextlib.contextmanager
def on_command_line() -> Iterator[None]:
    """Messages raised for the duration speak flags (the CLI runs its commands under it)."""
    token = _ON_COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _ON_COMMAND_LINE.reset(token)


def in_callers_words(flag: str, python: str) -> str:
    """`flag` where the command line asks, else `python`: the one place a message picks."""
    return flag if _ON_COMMAND_LINE.get() else python


def input_hint(name: str, dims: Sequence[int | str] | None = None, dtype: str | None = None,
               ) -> str:
    """How to give input `name` the shape `dims` (a dim not known: 'N'; None: any shape), in
    the caller's words: `--input x=1x3x224x224[:int64]`, or `inputs={'x': (1, 3, 224, 224)}`
    (an integer dtype: onnxflops.bind.TypedShape((1, 128), 'int64'))."""
    if dims is None:
        return in_callers_words(f"--input {name}=DIMS", f"inputs={{{name!r}: shape}}")
    flag = f"--input {name}={'x'.join(map(str, dims)) or 'scalar'}" + (f":{dtype}" if dtype else "")
    shape = "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"
    if dtype:
        shape = f"onnxflops.bind.TypedShape({shape}, {dtype!r})"
    return in_callers_words(flag, f"inputs={{{name!r}: {shape}}}")
