"""Progress of long work (converting and counting a model, the graphs of `llm`) as one tqdm bar
on stderr, naming the step running and counting those done.

The bar shows only once the work has run past a second, only where stderr is a terminal, and
clears itself when done; without tqdm (it comes with the framework extras) there is none. Work
inside work (the counts `llm` makes) adds its steps to the bar already shown.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, Iterator

# A bar appears only for work that has run this long: quick counts print nothing extra.
DELAY_S = 1.0
# The least time between two redraws.
REDRAW_S = 0.1

# The bar shown, what it is of, and when it was made; empty where none is, None where another
# bar than ours has the line.
_bars: list[tuple[Any, str, float] | None] = []


@contextlib.contextmanager
def steps(what: str) -> Iterator[None]:
    """A bar for `what` while the block runs; inside another's block, that one's bar."""
    if _bars or not _is_terminal(sys.stderr):  # no bar: and no tqdm import at each start
        yield
        return
    try:
        from tqdm import tqdm
    except ImportError:
        yield
        return
    # disable=None: off where stderr is not a terminal (pipes, CI, files, notebooks).
    with tqdm(desc=what, unit="step", file=sys.stderr, delay=DELAY_S, mininterval=REDRAW_S,
              leave=False, disable=None, bar_format="{desc} ({n} steps done, {elapsed})") as bar:
        _bars.append((bar, what, time.monotonic()))
        try:
            yield
        finally:
            _bars.pop()


@contextlib.contextmanager
def shown_elsewhere() -> Iterator[None]:
    """For the block, another bar has the line (`profile`'s and `report`'s stages): the work
    inside shows none of its own."""
    _bars.append(None)
    try:
        yield
    finally:
        _bars.pop()


@contextlib.contextmanager
def step(label: str) -> Iterator[None]:
    """One step of the work whose bar is shown (none: nothing)."""
    if not _bars or _bars[-1] is None:
        yield
        return
    bar, what, started = _bars[-1]
    # The step running is named at once where the bar shows already (tqdm draws it only once
    # DELAY_S have passed: a redraw asked for before then would show it early).
    shown = time.monotonic() - started >= DELAY_S
    bar.set_description_str(f"{what}: {label}", refresh=shown and not bar.disable)
    yield
    bar.update()


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False
