"""A warm pool of started workers, shared by the sessions of one server process."""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

from ._worker import Worker

log = logging.getLogger(__name__)


class WorkerPool:
    """Keeps ``size`` started workers ready; ``acquire`` hands one out at once.

    One background thread refills the pool after each ``acquire`` and closes the
    workers handed back with ``retire`` (killing a sandbox and deleting its directory
    takes milliseconds that a reset should not wait for). With the pool empty (a
    burst of resets), ``acquire`` starts a worker itself.
    """

    def __init__(self, factory: Callable[[], Worker], size: int) -> None:
        if size < 0:
            raise ValueError("pool size must be >= 0")
        self._factory = factory
        self._size = size
        self._ready: collections.deque[Worker] = collections.deque()
        self._retired: collections.deque[Worker] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.started = 0  # workers started by the filler (for tests and benchmarks)

    def start(self) -> WorkerPool:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="coding-env-pool", daemon=True)
            self._thread.start()
        return self

    def wait_full(self, timeout_s: float) -> bool:
        """Block until ``size`` workers are ready (or ``timeout_s``); True when full."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self._ready) >= self._size or self._closed, timeout_s)

    @property
    def ready(self) -> int:
        return len(self._ready)

    def acquire(self) -> Worker:
        """A started worker: from the pool when one is ready, else a new one."""
        with self._cond:
            while self._ready:
                worker = self._ready.popleft()
                self._cond.notify_all()
                if worker.alive:
                    worker.sandbox.repin()  # made ahead of time: spread by today's load
                    return worker
                self._retired.append(worker)
        return self._factory()

    def retire(self, worker: Worker) -> None:
        """Close ``worker`` in the background (at once when the pool is not running)."""
        with self._cond:
            if self._thread is not None and not self._closed:
                self._retired.append(worker)
                self._cond.notify_all()
                return
        worker.close()

    def stop(self) -> None:
        """Start no more workers (``close`` still closes the ones held)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def close(self) -> None:
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout=60)
        with self._cond:
            workers = [*self._ready, *self._retired]
            self._ready.clear()
            self._retired.clear()
        for worker in workers:
            worker.close()

    def _run(self) -> None:
        failures = 0
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or self._retired or len(self._ready) < self._size)
                if self._closed:
                    return
                retired = self._retired.popleft() if self._retired else None
            if retired is not None:
                retired.close()
                continue
            try:
                worker = self._factory()
            except Exception:
                if self._closed:  # the env closed under a worker still starting: no failure
                    return
                failures += 1
                log.exception("coding env: starting a pooled worker failed")
                with self._cond:
                    self._cond.wait(min(30.0, 0.5 * 2**failures))
                continue
            failures = 0
            with self._cond:
                if self._closed:
                    worker.close()
                    return
                self._ready.append(worker)
                self.started += 1
                self._cond.notify_all()
