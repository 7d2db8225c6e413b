"""Progress of long work as tqdm bars on stderr: the one progress module of onnxflops.

`steps`: converting and counting a model, the graphs of `llm`: one bar naming the step running
and counting those done; it shows only once the work has run past a second. Work inside work (the
counts `llm` makes) adds its steps to the bar already shown.
`stages`: measuring several models through the same stages (`profile`, `report`): one bar of the
share done, naming the model and the stage running.

Bars show only where stderr is a terminal, and clear themselves when done; without tqdm (it comes
with the framework extras) there are none.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, Iterator, Sequence

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


class Stages:
    """Where measuring `items` models, each through `names` in order, has got to."""

    def __init__(self, bar: Any | None, items: int, names: Sequence[str]):
        self.bar, self.items, self.names = bar, items, tuple(names)
        self.index = 0  # models done
        self.label = ""

    def start(self, label: str) -> None:
        """The next model, named `label`, begins its first stage."""
        self.label = label
        self.update(self.names[0], 0.0)

    def update(self, stage: str, fraction: float) -> None:
        """`fraction` of `stage` done: the share of all models done is
        (models done + (stage index + fraction) / (stages − 1)) / models."""
        if self.bar is None:
            return
        k = self.names.index(stage) if stage in self.names else 0
        within = min(1.0, (k + fraction) / max(1, len(self.names) - 1))
        self.bar.n = min(1.0, (self.index + within) / self.items)
        self.bar.set_description_str(f"{self.index + 1}/{self.items} {self.label}: {stage}",
                                     refresh=False)
        self.bar.refresh()

    def finish_one(self) -> None:
        self.index += 1


@contextlib.contextmanager
def stages(items: int, names: Sequence[str]) -> Iterator[Stages]:
    """A bar through `names` for each of `items` models while the block runs; the work inside
    shows no bar of its own (see `shown_elsewhere`)."""
    bar = None
    if _is_terminal(sys.stderr):
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            bar = tqdm(total=1.0, file=sys.stderr, leave=False, disable=None,
                       mininterval=REDRAW_S, bar_format="{percentage:3.0f}% |{bar:30}| {desc}")
    try:
        with shown_elsewhere():
            yield Stages(bar, items, names)
    finally:
        if bar is not None:
            bar.close()


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False
