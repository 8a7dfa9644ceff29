"""Configurable environments for server tests.

``make_env(...)`` returns a fresh env class with its own ``Tracker``, so each test sees
only the instances, calls and closes of its own server. ``PidEnv`` is a fixed,
importable class for tests that start servers in other processes.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any, ClassVar

from pydantic import Field

from openenv import Action, AsyncEnvironment, Environment, EnvModels, Execution, Observation, State


class TAction(Action):
    """What the test env should do on ``step``."""

    message: str = ""
    sleep_s: float = Field(default=0.0, ge=0)
    fail: str | None = None
    blob_size: int = Field(default=0, ge=0)
    done: bool = False
    truncated: bool = False


class TObservation(Observation):
    message: str = ""
    step: int = 0
    thread: int = 0
    pid: int = 0
    instance: int = 0
    seed: int | None = None
    episode_id: str | None = None
    options: dict[str, Any] | None = None
    blob: bytes = b""


class TState(State):
    instance: int = 0
    thread: int = 0
    pid: int = 0


MODELS = EnvModels(TAction, TObservation, TState)


class Tracker:
    """Everything the envs of one class did, readable from the test thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.instances: list[Any] = []
        #: (instance number, method, thread ident) in call order
        self.calls: list[tuple[int, str, int]] = []
        self.closed = threading.Event()
        #: thread ident -> thread name, for every thread that ran env code
        self.names: dict[int, str] = {}

    def register(self, env: Any) -> int:
        with self.lock:
            self.instances.append(env)
            return len(self.instances)

    def record(self, no: int, what: str) -> None:
        with self.lock:
            self.calls.append((no, what, threading.get_ident()))
            self.names[threading.get_ident()] = threading.current_thread().name
            if what == "close":
                self.closed.set()

    def threads(self, what: str, no: int | None = None) -> set[int]:
        with self.lock:
            return {t for n, w, t in self.calls if w == what and (no is None or n == no)}

    def close_counts(self) -> list[int]:
        """How often ``close`` ran, per instance, in construction order."""
        with self.lock:
            return [sum(1 for n, w, _ in self.calls if n == i + 1 and w == "close")
                    for i in range(len(self.instances))]

    def count(self, what: str) -> int:
        with self.lock:
            return sum(1 for _, w, _ in self.calls if w == what)


class _Core:
    """The behaviour both env kinds share (no I/O)."""

    tracker: ClassVar[Tracker]
    fail_on_init: ClassVar[bool] = False
    fail_on_reset: ClassVar[bool] = False
    #: when set, ``close`` records "close-start" then waits for this event (bounded)
    close_gate: ClassVar[threading.Event | None] = None
    #: when set, a ``step`` whose message is "meet" waits at this barrier (bounded): steps
    #: that all pass it ran at the same time, whatever the clock says
    step_barrier: ClassVar[threading.Barrier | None] = None
    #: when set, a ``step`` whose message is "hold" records "held" then waits for this event
    #: (bounded): the test releases it once it has seen what must happen meanwhile
    step_gate: ClassVar[threading.Event | None] = None

    def _init(self) -> None:
        if self.fail_on_init:
            raise RuntimeError("cannot build this env")
        self.no = self.tracker.register(self)
        self.tracker.record(self.no, "init")
        self._state = TState(instance=self.no)

    def _reset(self, seed: int | None, episode_id: str | None,
               options: dict[str, Any] | None) -> TObservation:
        self.tracker.record(self.no, "reset")
        if self.fail_on_reset:
            raise ValueError("reset exploded")
        self._state = TState(instance=self.no, episode_id=episode_id,
                             thread=threading.get_ident(), pid=os.getpid())
        return TObservation(message="ready", seed=seed, episode_id=episode_id, options=options,
                            thread=threading.get_ident(), pid=os.getpid(), instance=self.no)

    def _meet(self, action: TAction) -> None:
        """Wait at ``step_barrier`` or on ``step_gate`` when the action asks (see above)."""
        if action.message == "meet" and self.step_barrier is not None:
            self.step_barrier.wait(30)
        if action.message == "hold" and self.step_gate is not None:
            self.tracker.record(self.no, "held")
            self.step_gate.wait(30)

    def _step(self, action: TAction) -> TObservation:
        if action.fail:
            raise RuntimeError(action.fail)
        self._state.step_count += 1
        self._state.thread = threading.get_ident()
        return TObservation(
            message=action.message,
            step=self._state.step_count,
            thread=threading.get_ident(),
            pid=os.getpid(),
            instance=self.no,
            blob=bytes(i % 256 for i in range(action.blob_size)),
            reward=float(self._state.step_count),
            done=action.done or action.truncated,
            truncated=action.truncated,
            metadata={"echo": action.message} if action.message == "with-metadata" else {},
        )

    def _get_state(self) -> TState:
        self.tracker.record(self.no, "state")
        out = self._state.model_copy()
        out.thread = threading.get_ident()
        out.pid = os.getpid()
        return out


class SyncTestEnv(_Core, Environment[TAction, TObservation, TState]):
    """A sync test env; ``sleep_s`` blocks the calling thread."""

    execution = Execution.THREAD
    tracker = Tracker()

    def __init__(self) -> None:
        self._init()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,
              options: dict[str, Any] | None = None) -> TObservation:
        return self._reset(seed, episode_id, options)

    def step(self, action: TAction) -> TObservation:
        self.tracker.record(self.no, "step")
        self._meet(action)
        if action.sleep_s:
            time.sleep(action.sleep_s)
        return self._step(action)

    def state(self) -> TState:
        return self._get_state()

    def close(self) -> None:
        if self.close_gate is not None:
            self.tracker.record(self.no, "close-start")
            self.close_gate.wait(10)
        self.tracker.record(self.no, "close")


class AsyncTestEnv(_Core, AsyncEnvironment[TAction, TObservation, TState]):
    """An async test env; ``sleep_s`` awaits ``asyncio.sleep``."""

    tracker = Tracker()

    def __init__(self) -> None:
        self._init()

    async def reset(self, *, seed: int | None = None, episode_id: str | None = None,
                    options: dict[str, Any] | None = None) -> TObservation:
        return self._reset(seed, episode_id, options)

    async def step(self, action: TAction) -> TObservation:
        self.tracker.record(self.no, "step")
        if action.message in ("meet", "hold"):
            await asyncio.to_thread(self._meet, action)
        if action.sleep_s:
            await asyncio.sleep(action.sleep_s)
        return self._step(action)

    async def state(self) -> TState:
        return self._get_state()

    async def close(self) -> None:
        if self.close_gate is not None:
            self.tracker.record(self.no, "close-start")
            await asyncio.to_thread(self.close_gate.wait, 10)
        self.tracker.record(self.no, "close")


def make_env(kind: str = "sync", execution: Execution = Execution.THREAD, **attrs: Any) -> Any:
    """A fresh env class with its own tracker.

    ``kind`` is ``"sync"`` or ``"async"``; ``attrs`` override class attributes
    (``max_sessions``, ``fail_on_init``, ``fail_on_reset``, ``env_name``, ...).
    """
    base = SyncTestEnv if kind == "sync" else AsyncTestEnv
    namespace: dict[str, Any] = {"tracker": Tracker(), **attrs}
    if kind == "sync":
        namespace["execution"] = execution
    return type(f"{kind.capitalize()}{execution.name.title().replace('_', '')}Env", (base,), namespace)


class PidEnv(Environment[TAction, TObservation, TState]):
    """Reports the serving process id; importable by worker processes."""

    execution = Execution.INLINE

    def __init__(self) -> None:
        self._state = TState(pid=os.getpid())

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,
              options: dict[str, Any] | None = None) -> TObservation:
        return TObservation(message="ready", pid=os.getpid())

    def step(self, action: TAction) -> TObservation:
        self._state.step_count += 1
        return TObservation(message=action.message, pid=os.getpid(), step=self._state.step_count)

    def state(self) -> TState:
        return self._state
