"""Threads kept for reuse: the event loop's thread starts none while it serves.

Starting a thread can stall the loop for as long as something anywhere on the host
likes. On Linux every thread start (``clone``), exit and ``exec`` on the host takes one
lock for reading, and each move of a process into a cgroup takes it for writing (a
sandbox joining its session's cgroups does, at every start); while a writer waits or
holds it, every start on the host sleeps uninterruptibly. On the coding chaos test
(perf sched) the loop thread slept 169 ms so, starting the thread of an ``interrupt()``,
until a starved sandbox process finished its move; CPython 3.11 also holds the
interpreter lock across a thread's start, so every other thread of the server waited too.

So a session's own thread (``Execution.DEDICATED_THREAD``) and the thread an overrun
call's ``interrupt()`` runs on are ``Lane`` s taken from a ``Lanes``: a lane given back
idle is handed to the next session, and threads are started only when none is idle
(the first burst of sessions; an interrupt that never returns keeps its lane). Lane
threads are daemons, outside ``concurrent.futures``' exit-time join: a call stuck past
shutdown (its sandbox is killed by then) never holds the process's exit.

A thread that ran one session's env carries whatever that env left on it: values in a
``threading.local``, an event loop set for the thread, a library's per-thread handle
(Playwright's sync API, a database connection checked against the thread). No one can
list or clear those (a ``threading.local`` keeps its values in each thread's own state),
so a lane that ran a session serves another only for an env that says it leaves nothing
(``Environment.reuse_session_thread``: the coding env). Any other env's session gets a
lane from ``FRESH_SESSIONS``: a thread no call ran on, started ahead by that pool's own
thread (never the loop's, but for a burst past its spares), and ended once its session
is given back.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

__all__ = ["FRESH_SESSIONS", "INTERRUPTS", "SESSIONS", "Lane", "Lanes", "session_lanes"]

#: Idle lanes kept for later sessions (more, given back at once, end their threads).
SESSION_IDLE = 64
#: Idle lanes kept ready for the next new sessions by a thread of its own.
SESSION_SPARE = 2
#: Idle lanes kept for ``interrupt()`` calls.
INTERRUPT_IDLE = 4
#: Unused lanes kept ready for sessions of envs whose threads are not reused.
FRESH_SPARE = 4


class Lane(Executor):
    """One thread; what is submitted runs on it in order. ``shutdown`` gives it back to
    its ``Lanes`` once its last call has returned (at once when idle)."""

    def __init__(self, lanes: Lanes, name: str) -> None:
        self._lanes = lanes
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
        self._pending = 0  # submitted, not yet returned (under the lanes' lock)
        self._given_back = False
        self.used = False  # something was submitted to it
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if kwargs:
            fn, args = _bound(fn, args, kwargs), ()
        fut: Future[Any] = Future()
        with self._lanes.lock:
            if self._given_back:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._pending += 1
            self.used = True
        self._calls.put((fut, fn, args))
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Give the lane back (``wait``: after its calls have returned)."""
        with self._lanes.lock:
            if self._given_back:
                return
            self._given_back = True
            idle = self._pending == 0
        if wait and not idle:
            done: Future[None] = Future()
            with self._lanes.lock:
                self._pending += 1
            self._calls.put((done, _nothing, ()))
            done.result()
        elif idle:
            self._lanes.give_back(self)

    def _run(self) -> None:
        while True:
            item = self._calls.get()
            if item is None:
                return
            fut, fn, args = item
            if fut.set_running_or_notify_cancel():
                try:
                    result = fn(*args)
                except BaseException as exc:
                    fut.set_exception(exc)
                    del exc
                else:
                    fut.set_result(result)
            del item, fut, fn, args
            with self._lanes.lock:
                self._pending -= 1
                back = self._given_back and self._pending == 0
            if back:
                self._lanes.give_back(self)

    def _reuse(self) -> Lane:
        self._given_back = False
        return self

    def _end(self) -> None:
        self._calls.put(None)


class Lanes:
    """A stack of idle lanes; ``take`` one (a new thread only when none is idle).

    Once ``prestart`` has run, a thread of its own keeps ``spare`` lanes idle: a burst of
    new sessions takes those while it starts more (a thread's start also waits until the
    new thread has run: tens of milliseconds on a loaded host, not the loop's to wait).
    ``reuse=False``: a lane given back after a call ends its thread, never idle again.
    """

    def __init__(self, name: str, max_idle: int, spare: int = 0, *, reuse: bool = True) -> None:
        self.name = name
        self.max_idle = max_idle
        self.spare = min(spare, max_idle)
        self.reuse = reuse
        self.lock = threading.Lock()
        self._short = threading.Condition(self.lock)
        self._idle: list[Lane] = []
        self._spawner: threading.Thread | None = None

    def take(self) -> Lane:
        with self.lock:
            lane = self._idle.pop()._reuse() if self._idle else None
            if len(self._idle) < self.spare:
                self._short.notify()
        return lane or Lane(self, self.name)

    def prestart(self, count: int = 0) -> None:
        """Have ``max(count, spare)`` idle lanes ready, and the thread that keeps
        ``spare`` of them (call before serving; again is cheap)."""
        with self.lock:
            missing = max(count, self.spare) - len(self._idle)
            spawner, self._spawner = self._spawner, self._spawner or threading.Thread(
                target=self._keep_spare, name=f"{self.name}-spare", daemon=True
            )
        for _ in range(missing):
            self.give_back(Lane(self, self.name))
        if spawner is None and self.spare:
            self._spawner.start()

    def _keep_spare(self) -> None:
        while True:
            with self.lock:
                self._short.wait_for(lambda: len(self._idle) < self.spare)
            self.give_back(Lane(self, self.name))

    def run(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on a lane of its own, given back once ``fn`` returns."""
        lane = self.take()
        lane.submit(fn)
        lane.shutdown(wait=False)

    def give_back(self, lane: Lane) -> None:
        with self.lock:
            if (self.reuse or not lane.used) and len(self._idle) < self.max_idle:
                self._idle.append(lane)
                return
        lane._end()

    @property
    def idle(self) -> int:
        return len(self._idle)


def _bound(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], Any]:
    return lambda: fn(*args, **kwargs)


def _nothing() -> None:
    return None


#: Sessions' own threads (``Execution.DEDICATED_THREAD``), shared by every env app of
#: the process.
SESSIONS = Lanes("openenv-session", SESSION_IDLE, spare=SESSION_SPARE)
#: Sessions' own threads for envs that do not say they may be reused: one thread per
#: session, started ahead.
FRESH_SESSIONS = Lanes("openenv-session-fresh", FRESH_SPARE, spare=FRESH_SPARE, reuse=False)
#: The threads ``interrupt()`` calls run on.
INTERRUPTS = Lanes("openenv-interrupt", INTERRUPT_IDLE)


def session_lanes(env_class: type[Any]) -> Lanes:
    """Where a ``DEDICATED_THREAD`` env's sessions take their threads."""
    return SESSIONS if getattr(env_class, "reuse_session_thread", False) else FRESH_SESSIONS



def _forked() -> None:
    """A forked child has none of the parent's threads: none idle there."""
    for lanes in (SESSIONS, FRESH_SESSIONS, INTERRUPTS):
        lanes._idle.clear()
        lanes._spawner = None


os.register_at_fork(after_in_child=_forked)
