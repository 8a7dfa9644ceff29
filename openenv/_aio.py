"""The one bridge from sync code to a coroutine: ``run_sync``.

With no event loop running in this thread it runs the awaitable with ``asyncio.run``.
Inside a running loop a blocking wait would deadlock that loop, so by default it
refuses (a ``TypeError`` saying what to await instead); ``in_thread=True`` (what
upstream OpenEnv's ``run_async_safely`` does) runs it on a fresh loop in a worker
thread and blocks this one until it is done.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["loop_running", "run_sync"]


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
