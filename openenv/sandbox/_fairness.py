"""CPU fairness between sessions: a session that has used little CPU lately runs first.

Every sandbox has its own cpu cgroup under the shared ``openenv-sandbox`` one, at the
session's base weight (``cpu_weight``). A session that steps (a shell, a worker that
runs a short cell, then waits for the agent) needs a few milliseconds of CPU now and
then, and needs them at once; a session that burns CPU (a busy loop, a flood, a slow
grader) needs throughput. At equal weights the first waits behind every busy sibling:
under 32 attacking sessions on 2 cores a stepping session's worker waited runnable
for 85% of the run.

``CpuFairness`` watches each session's CPU counter every ``period_s`` (150 ms) on a
thread of its own (never the event loop) and keeps a decaying average of its use, in
cores. A session watched for ``warmup_s`` (3 s) whose average is below ``light_cores``
(0.2) gets ``cpu_boost`` times its base weight; any other gets the base weight. A
session that starts burning loses its boost within one or two periods (the average
halves its past every period). The warm-up is there because, on a loaded host, every
CPU-bound process in the shared group is starved to a few percent of a core and so
looks light: a worker or a grader starting up, a pooled sandbox just handed to a new
session (``restart``) run at the base weight until they have shown 3 s of light use.
No session goes below its base weight (an honest grader never loses), and only the
sessions' weights change: the shared parent keeps its weight against the server and
everything else on the host.

The counters: ``cpuacct.usage`` (v1, nanoseconds) or ``cpu.stat``'s ``usage_usec``
(v2); where there is neither, or no cgroup at all, the policy is off (logged once).
``OPENENV_SANDBOX_LIMITS="cpu_boost=none"`` turns it off.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["PERIOD_S", "Counter", "CpuFairness", "Usage", "monitor", "off_once"]

log = logging.getLogger("openenv.sandbox")

#: How often the counters are read.
PERIOD_S = 0.15
#: The share of the average the past keeps after one period.
DECAY = 0.5
#: Average use (cores) below which a session counts as light and gets the boost.
LIGHT_CORES = 0.2
#: How long a session is watched before it can be light: a new sandbox (a worker or a
#: grader starting up, a pooled one just handed to a session) runs at the base weight.
WARMUP_S = 3.0


@dataclass(frozen=True, slots=True)
class Counter:
    """Where a session's cumulative CPU time is read: ``path`` holds nanoseconds
    (``cpuacct.usage``), or, with ``key``, a ``key value`` line in microseconds
    (``cpu.stat``'s ``usage_usec``)."""

    path: str
    key: str = ""

    def read_ns(self) -> int | None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            text = os.read(fd, 4096)
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            if not self.key:
                return int(text)
            for line in text.splitlines():
                name, _, value = line.partition(b" ")
                if name == self.key.encode():
                    return int(value) * 1000
        except ValueError:
            return None
        return None


class Usage:
    """A session's decaying average CPU use, in cores, from its cumulative counter."""

    def __init__(self, period_s: float = PERIOD_S, decay: float = DECAY) -> None:
        self.period_s = period_s
        self.decay = decay
        self.cores: float | None = None  # None until one period has been measured
        self.since: float | None = None  # when the first value was taken
        self._last: tuple[float, int] | None = None

    def add(self, now: float, total_ns: int) -> float | None:
        """Take the counter's value at ``now`` (seconds); returns the new average."""
        last, self._last = self._last, (now, total_ns)
        if last is None:
            self.since = now
            return self.cores
        dt = now - last[0]
        if dt <= 0:
            self._last = last
            return self.cores
        rate = max(0, total_ns - last[1]) / 1e9 / dt
        keep = self.decay ** (dt / self.period_s)
        self.cores = rate if self.cores is None else keep * self.cores + (1 - keep) * rate
        return self.cores

    def light(self, now: float, below: float, warmup_s: float) -> bool:
        """Whether the session has been watched for ``warmup_s`` and its average is
        under ``below`` cores."""
        if self.cores is None or self.since is None:
            return False
        return now - self.since >= warmup_s and self.cores < below

    def reset(self) -> None:
        self.cores, self.since, self._last = None, None, None


@dataclass(slots=True)
class _Session:
    counter: Counter
    weight_file: str
    base: str  # as written to weight_file
    boosted: str
    usage: Usage
    written: str


def _write(path: str, value: str) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except OSError:
        return False
    try:
        os.write(fd, value.encode())
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


class CpuFairness:
    """The sessions' weights, from their recent CPU use (see the module's docstring).

    ``add``/``remove``/``restart`` are cheap and thread-safe; ``tick`` is one pass over
    the sessions (the monitor's thread calls it every ``period_s``; tests call it with
    their own clock). The thread runs while there are sessions and stops with the last.
    """

    def __init__(
        self,
        *,
        period_s: float = PERIOD_S,
        decay: float = DECAY,
        light_cores: float = LIGHT_CORES,
        warmup_s: float = WARMUP_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.period_s = period_s
        self.decay = decay
        self.light_cores = light_cores
        self.warmup_s = warmup_s
        self.clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._thread: threading.Thread | None = None

    def add(
        self, name: str, counter: Counter, weight_file: str, base: str, boosted: str, *, run: bool = True
    ) -> None:
        """Watch session ``name``: ``base`` and ``boosted`` are its weights as written to
        ``weight_file`` (which holds ``base`` now). ``run``: start the thread if needed."""
        session = _Session(counter, weight_file, base, boosted, Usage(self.period_s, self.decay), base)
        with self._lock:
            self._sessions[name] = session
            session.usage.add(self.clock(), counter.read_ns() or 0)
            if run and self._thread is None:
                self._thread = threading.Thread(target=self._run, name="openenv-cpu-fairness", daemon=True)
                self._thread.start()

    def remove(self, name: str) -> None:
        with self._lock:
            self._sessions.pop(name, None)

    def restart(self, name: str) -> None:
        """Forget ``name``'s history (a pooled sandbox handed to a new session): back to
        its base weight until a period has measured it."""
        with self._lock:
            session = self._sessions.get(name)
            if session is None:
                return
            session.usage.reset()
            session.usage.add(self.clock(), session.counter.read_ns() or 0)
            if session.written != session.base and _write(session.weight_file, session.base):
                session.written = session.base

    def weights(self) -> dict[str, str]:
        """Each session's weight as last written."""
        with self._lock:
            return {name: s.written for name, s in self._sessions.items()}

    def tick(self, now: float | None = None) -> None:
        """Read every session's counter once and write the weights that changed."""
        with self._lock:
            now = self.clock() if now is None else now
            for session in self._sessions.values():
                total = session.counter.read_ns()
                if total is None:
                    continue  # being removed
                session.usage.add(now, total)
                light = session.usage.light(now, self.light_cores, self.warmup_s)
                wanted = session.boosted if light else session.base
                if wanted != session.written and _write(session.weight_file, wanted):
                    session.written = wanted

    def _run(self) -> None:
        while True:
            time.sleep(self.period_s)
            with self._lock:
                if not self._sessions:
                    self._thread = None
                    return
            try:
                self.tick()
            except Exception:  # never let a surprise end the policy silently
                log.exception("cpu fairness: a pass failed")

    def _after_fork(self) -> None:
        """In a forked child: no thread runs here, and the lock may be held."""
        self._lock = threading.Lock()
        self._sessions = {}
        self._thread = None


_MONITOR = CpuFairness()
os.register_at_fork(after_in_child=_MONITOR._after_fork)
_said: set[str] = set()


def monitor() -> CpuFairness:
    """This process's monitor (one for all its sandboxes)."""
    return _MONITOR


def off_once(reason: str) -> None:
    """Log, once per process and reason, why the policy is off."""
    if reason not in _said:
        _said.add(reason)
        log.warning("sandbox cpu fairness is off: %s", reason)
