"""Pinning a session to whole cores: its ``cpus`` limit as a set of cores, not only a quota.

A CFS quota alone (``cpus=1``: 100 ms of CPU per 100 ms period) lets a session with four
busy processes run on every core at once for part of each period; on a small host that
leaves no core free in those bursts, and every other session's step waits behind them.
Pinned to ``ceil(cpus)`` cores (the cpuset controller), the same session only ever
competes on its own cores, and new sandboxes go to the cores with the fewest pinned
sandboxes. A sandbox made ahead of time (an env's pool of ready shells or workers) is
pinned again when a session takes it (``SessionCgroup.repin``), so sessions spread by
the load when they start, not when their sandbox was made.

Pinning applies only where it leaves cores to others: ``ceil(cpus)`` below the cores
the server itself may use. The counts are per server process.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from pathlib import Path

__all__ = ["CorePicker", "parse_cpu_list", "prepare_parent"]


def parse_cpu_list(text: str) -> list[int]:
    """``0-2,5`` -> ``[0, 1, 2, 5]`` (the kernel's list format)."""
    cores: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cores.extend(range(int(first), int(last or first) + 1))
    return cores


def prepare_parent(parent: Path) -> None:
    """A new cgroup v1 cpuset directory starts with no cores and no memory nodes: give
    ``parent`` its own parent's, so that sessions' cpusets can be made under it."""
    for name in ("cpuset.cpus", "cpuset.mems"):
        mine = parent / name
        if not mine.read_text().strip():
            mine.write_text((parent.parent / name).read_text().strip())


class CorePicker:
    """Which cores a new session is pinned to: the least used of ``cores``."""

    def __init__(self, cores: list[int]) -> None:
        self.cores = cores
        self._used: Counter[int] = Counter({core: 0 for core in cores})
        self._lock = threading.Lock()

    def wanted(self, cpus: float | None) -> int:
        """How many cores a session with this ``cpus`` limit is pinned to (0: not pinned)."""
        if not cpus:
            return 0
        count = math.ceil(cpus)
        return count if count < len(self.cores) else 0

    def take(self, cpus: float | None) -> list[int]:
        """The cores for a new session (empty: not pinned); give them back with ``give``."""
        count = self.wanted(cpus)
        return self.take_exactly(count) if count else []

    def take_exactly(self, count: int) -> list[int]:
        """The ``count`` least used cores, counted as used until given back."""
        with self._lock:
            chosen = sorted(self.cores, key=lambda core: (self._used[core], core))[:count]
            self._used.update(chosen)
        return sorted(chosen)

    def hold(self, cores: list[int]) -> None:
        """Count ``cores`` as used again (undoing a ``give``)."""
        with self._lock:
            self._used.update(cores)

    def give(self, cores: list[int]) -> None:
        with self._lock:
            self._used.subtract(cores)

    def load(self) -> dict[int, int]:
        """Sessions pinned to each core."""
        with self._lock:
            return dict(self._used)
