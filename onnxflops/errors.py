"""Errors a user can act on: each renders as one line naming what is at fault."""

from __future__ import annotations

import re
from typing import Iterable


class OnnxFlopsError(Exception):
    """A problem with the user's input (file, shape, option), reported as one line by the CLI."""

    def __init__(self, message: str):
        # One line whatever names it quotes: a name may hold line breaks.
        super().__init__(str(message).translate(_ESCAPED_LINE_BREAKS))


# Every character str.splitlines() breaks at, written as its escape.
_ESCAPED_LINE_BREAKS = str.maketrans({c: ascii(c)[1:-1] for c in
                                      "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


class UncostedWarning(UserWarning):
    """A count left nodes uncosted: its totals are short of the model's work."""


class Uncostable(Exception):
    """Raised by a cost rule when a node cannot be costed; the reason goes to `uncosted`."""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _lines(e: BaseException) -> list[str]:
    return [line.strip() for line in _ANSI.sub("", str(e)).splitlines() if line.strip()]


def first_line(e: BaseException) -> str:
    """The first non-blank line of an exception message: errors from other libraries are
    reported in one line."""
    lines = _lines(e)
    return lines[0] if lines else type(e).__name__


def last_line(e: BaseException) -> str:
    """The last non-blank line: TensorFlow puts the traced call stack first, the error last."""
    lines = _lines(e)
    return lines[-1] if lines else type(e).__name__


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the known name closest to a misspelled one; else ''."""
    import difflib  # only on an error: a count's start-up does without it

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
