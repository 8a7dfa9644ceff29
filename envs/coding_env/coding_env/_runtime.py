"""Settings and the per-process runtime (sandbox config, warm pool, grader)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from openenv.sandbox import (
    Isolation,
    Limits,
    SandboxConfig,
    SandboxLevel,
    SessionLimits,
    parse_level,
    resolve_isolation,
)
from openenv.sandbox._sandbox import describe, reclaim

from ._grader import Grader
from ._pool import WorkerPool
from ._worker import Worker, WorkerLost, default_python

log = logging.getLogger(__name__)
MiB = 1 << 20
_SHUT = "the coding env is shutting down"


@dataclass(frozen=True, slots=True)
class CodingSettings:
    """The env's constructor arguments (``openenv serve coding --env-kwargs '{...}'``).

    Args:
        cell_timeout_s: wall clock of one cell before it is interrupted.
        grace_s: how long an interrupted cell may take to stop before the worker is
            killed (its state lost) and a fresh one started.
        max_steps: steps per episode (a reset option may lower it); at the last step
            the hidden tests run on the cells so far.
        pool_size: started workers kept ready per server process (0: none).
        sandbox: ``"auto"``, ``"strict"`` or ``"none"`` (default: ``OPENENV_SANDBOX``,
            else ``"auto"``); see ``openenv.sandbox``.
        memory_mb, cpu_s, nproc, file_size_mb, open_files: rlimits of each worker
            process (``cpu_s`` adds up over a whole episode).
        output_limit: bytes kept of each of stdout and stderr per cell (head + tail).
        test_timeout_s: wall clock of each hidden test; grade_timeout_s: of a grading.
        python: the interpreter in the sandbox (default: one every sandbox can run).
        session_limits: the memory, CPU, processes and disk of each sandbox (a
            session's worker; each grading), as ``openenv serve --session-limits``
            takes them, ``"memory=512M,cpus=0.5"``; default ``OPENENV_SANDBOX_LIMITS``
            or the sandbox's defaults.
    """

    cell_timeout_s: float = 10.0
    grace_s: float = 2.0
    max_steps: int = 50
    pool_size: int = 4
    sandbox: str | None = None
    memory_mb: int = 1024
    cpu_s: int = 600
    nproc: int = 128
    file_size_mb: int = 64
    open_files: int = 256
    output_limit: int = 16384
    test_timeout_s: float = 5.0
    grade_timeout_s: float = 60.0
    python: str | None = None
    session_limits: str | None = None

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> CodingSettings:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise TypeError(f"coding_env: unknown settings {unknown}; known: {sorted(names)}")
        settings = cls(**kwargs)
        if settings.cell_timeout_s <= 0 or settings.grace_s < 0 or settings.max_steps < 1:
            raise ValueError("coding_env: cell_timeout_s > 0, grace_s >= 0 and max_steps >= 1 are required")
        return settings


class CodingRuntime:
    """What one server process shares among its sessions: the sandbox config, the
    interpreter, a warm ``WorkerPool`` and the ``Grader``."""

    def __init__(self, settings: CodingSettings) -> None:
        self.settings = settings
        python, ro_paths = default_python()
        self.python = settings.python or python
        base = SandboxConfig.from_env()
        if settings.session_limits is not None:  # this env's own, over OPENENV_SANDBOX_LIMITS
            base = dataclasses.replace(base, session_limits=SessionLimits.parse(settings.session_limits))
        level = parse_level(settings.sandbox) if settings.sandbox else base.level
        limits = Limits(
            cpu_s=settings.cpu_s,
            memory_bytes=settings.memory_mb * MiB,
            nproc=settings.nproc,
            file_size_bytes=settings.file_size_mb * MiB,
            open_files=settings.open_files,
            wall_s=settings.grade_timeout_s,
        )
        self.config = dataclasses.replace(base, level=level, limits=limits, ro_paths=ro_paths, network=False)
        #: What every sandbox of this process gets; ``strict`` without bubblewrap raises
        #: ``SandboxUnavailable`` here, so a server refuses to start rather than run weaker.
        self.isolation: Isolation = resolve_isolation(self.config)
        self.grader = Grader(
            self.config,
            python=self.python,
            timeout_s=settings.grade_timeout_s,
            test_timeout_s=settings.test_timeout_s,
        )
        self.pool = WorkerPool(self.new_worker, settings.pool_size)
        self.closed = False
        self._lock = threading.Lock()
        #: every started worker still referenced: pooled, or held by a session
        self._live: weakref.WeakSet[Worker] = weakref.WeakSet()

    @property
    def max_reply(self) -> int:
        """The longest reply a worker may send: stdout and stderr, the result, the
        exception's message and traceback, each at most ``output_limit`` characters,
        each character at most 6 bytes of JSON, and room for the rest."""
        return 6 * 5 * self.settings.output_limit + (64 << 10)

    @property
    def level(self) -> SandboxLevel:
        return self.config.level

    def describe(self) -> dict[str, Any]:
        """The sandbox in force, for ``/metadata`` and each reset's observation."""
        return describe(self.config, self.isolation, own_uid=os.geteuid() == 0)

    def new_worker(self) -> Worker:
        """A started worker; ``WorkerLost`` once the runtime is closed."""
        if self.closed:
            raise WorkerLost(_SHUT)
        limit = str(self.settings.output_limit)
        env = {"CODING_ENV_OUTPUT_LIMIT": limit, "CODING_ENV_RESULT_LIMIT": limit}
        return Worker(self.config, python=self.python, env=env, max_reply=self.max_reply, track=self._track)

    def _track(self, worker: Worker) -> None:
        """Count ``worker`` live from its first moment, before its process is even
        started: ``close`` kills one still starting too, so that a server stopping never
        waits for a start (seconds on a loaded host) nor leaves its sandbox behind."""
        with self._lock:
            if self.closed:
                raise WorkerLost(_SHUT)
            self._live.add(worker)

    def start(self) -> CodingRuntime:
        """Reclaim what a server killed with SIGKILL left, then fill the pool."""
        try:
            left = reclaim(self.config)
        except OSError:
            log.exception("coding env: reclaiming leftover sandboxes failed")
        else:
            if left:
                log.warning("coding env: reclaimed the leftover sandboxes of %d uids", len(left))
        self.pool.start()
        return self

    def close(self) -> None:
        """Stop everything this process runs for the env, sessions' workers included.

        A session's cell or grading still running (the server stopping under it) is
        killed, not waited for: its thread gets ``WorkerLost`` (or ``SolutionLost``)
        at once and returns, and no new worker starts. Every sandbox is given back
        here (directory, cgroup, mount, uid), many at once: a server stopping with
        dozens of sessions must end within its grace period. The sessions' own
        ``close`` frees only their pipes.
        """
        with self._lock:
            self.closed = True
            live = list(self._live)
        self.pool.stop()  # no new worker from here on
        each([worker.kill for worker in live] + [proc.kill for proc in self.grader.shut()])
        self.pool.close()  # the filler's last worker, and the pipes of the pooled ones


def each(calls: list[Callable[[], None]], *, threads: int = 16) -> None:
    """Run ``calls`` on up to ``threads`` threads and wait for them; errors are logged."""

    def run(call: Callable[[], None]) -> None:
        try:
            call()
        except Exception:
            log.exception("coding env: giving a sandbox back failed")

    if len(calls) <= 1:
        for call in calls:
            run(call)
        return
    with ThreadPoolExecutor(max_workers=min(threads, len(calls)), thread_name_prefix="coding-close") as ex:
        list(ex.map(run, calls))


@contextlib.contextmanager
def runtime(settings: CodingSettings) -> Iterator[CodingRuntime]:
    """The per-process resource: started at server start, closed at shutdown."""
    rt = CodingRuntime(settings).start()
    try:
        yield rt
    finally:
        rt.close()
