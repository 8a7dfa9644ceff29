"""The bridges from sync code to coroutines: ``run_sync`` and ``LoopThread``.

With no event loop running in this thread it runs the awaitable with ``asyncio.run``.
Inside a running loop a blocking wait would deadlock that loop, so by default it
refuses (a ``TypeError`` saying what to await instead); ``in_thread=True`` (what
upstream OpenEnv's ``run_async_safely`` does) runs it on a fresh loop in a worker
thread and blocks this one until it is done.

``LoopThread`` is one event loop in a thread of its own, for sync code whose coroutines
must share a loop between calls (an async client's connection pool, an in-process app):
``run(coro)`` waits for the result from any thread, ``close()`` stops the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["LoopThread", "loop_running", "run_sync"]


def loop_running() -> bool:
    """Whether an event loop runs in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_sync(awaitable: Awaitable[T], refusal: str | None = None, *, in_thread: bool = False) -> T:
    """``awaitable``'s result, from sync code (see the module docstring)."""
    if not loop_running():
        done: T = asyncio.run(_await(awaitable))
        return done
    if in_thread:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            result: T = pool.submit(asyncio.run, _await(awaitable)).result()
            return result
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()  # never awaited: closed here, so no "was never awaited" warning
    raise TypeError(refusal or "called synchronously inside a running event loop: await it instead")


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class LoopThread:
    """An event loop running in a daemon thread named ``name``, started on first use."""

    def __init__(self, name: str = "openenv-loop") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        return self._loop is not None

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """``coro``'s result, run on the thread's loop (``timeout``: seconds to wait)."""
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name=self.name, daemon=True)
                self._thread.start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    def close(self) -> None:
        """Stop the loop and its thread (a later ``run`` starts a new one)."""
        with self._lock:
            loop, self._loop = self._loop, None
            thread, self._thread = self._thread, None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(5)
        if not loop.is_running():
            loop.close()
