"""A one-line progress bar with an ETA, on stderr (redrawn at most 4 times a second)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from ._trajectory import Trajectory


def _clock(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """Counts finished episodes of ``total``; draws ``[#####.....] 12/40 ... ETA``."""

    def __init__(self, total: int, *, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.total, self.enabled = total, enabled
        self.stream = stream or sys.stderr
        self.done = self.errors = self.passed = 0
        self.started = time.monotonic()
        self._drawn = 0.0
        self.listener: Callable[[Trajectory], None] | None = None

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        width = 24
        filled = width * self.done // self.total if self.total else width
        bar = "#" * filled + "." * (width - filled)
        return (
            f"[{bar}] {self.done}/{self.total} episodes, {self.passed} passed, {self.errors} errors, "
            f"{_clock(elapsed)} elapsed, ETA {_clock(eta)}"
        )

    def advance(self, trajectory: Trajectory) -> None:
        self.done += 1
        self.errors += trajectory.status == "error"
        self.passed += trajectory.passed
        if self.listener is not None:
            self.listener(trajectory)
        now = time.monotonic()
        if self.enabled and (now - self._drawn > 0.25 or self.done == self.total):
            self._drawn = now
            self.stream.write("\r" + self.line())
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.total:
            self.stream.write("\n")
            self.stream.flush()
