"""A one-line progress bar on stderr for long measurements; silent when stderr is not a terminal."""

from __future__ import annotations

import sys
from typing import TextIO

_STAGES = ("counting", "timing", "profiling", "ceilings", "done")


class ProgressBar:
    """Progress through the stages of measuring `total` models, redrawn in place."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 30,
                 force: bool = False):
        self.total = total
        self.stream = stream or sys.stderr
        self.width = width
        self.enabled = force or self.stream.isatty()
        self.index = 0
        self.label = ""

    def start(self, label: str) -> None:
        self.label = label
        self.update("counting", 0.0)

    def update(self, stage: str, fraction: float) -> None:
        if not self.enabled:
            return
        stage_index = _STAGES.index(stage) if stage in _STAGES else 0
        within = (stage_index + fraction) / (len(_STAGES) - 1)
        done = min(1.0, (self.index + min(within, 1.0)) / self.total)
        filled = int(done * self.width)
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {100 * done:3.0f}%  "
                          f"{self.index + 1}/{self.total} {self.label}: {stage}\033[K")
        self.stream.flush()

    def finish_one(self) -> None:
        self.index += 1

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
