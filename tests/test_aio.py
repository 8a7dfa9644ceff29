"""``openenv._aio``: the bridges from sync code to coroutines (``run_sync``, ``LoopThread``)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from openenv._aio import LoopThread, loop_running, run_sync


async def _where() -> tuple[asyncio.AbstractEventLoop, str]:
    return asyncio.get_running_loop(), threading.current_thread().name


def test_run_sync_off_the_loop_runs_to_completion() -> None:
    assert not loop_running()
    assert run_sync(asyncio.sleep(0, result=7)) == 7


def test_run_sync_inside_a_loop_refuses_or_uses_a_thread() -> None:
    async def main() -> tuple[asyncio.AbstractEventLoop, str]:
        assert loop_running()
        pending = asyncio.sleep(0, result=1)
        with pytest.raises(TypeError, match="await it"):
            run_sync(pending, "await it")
        loop, thread = run_sync(_where(), in_thread=True)
        assert loop is not asyncio.get_running_loop()
        return loop, thread

    _, thread = asyncio.run(main())
    assert thread != threading.current_thread().name


def test_loop_thread_keeps_one_loop_until_closed() -> None:
    worker = LoopThread("probe-loop")
    assert not worker.running
    first, name = worker.run(_where())
    second, _ = worker.run(_where(), timeout=10)
    assert first is second
    assert name == "probe-loop"

    async def inside() -> asyncio.AbstractEventLoop:  # from a thread whose own loop runs
        return worker.run(_where())[0]

    assert asyncio.run(inside()) is first
    worker.close()
    assert not worker.running
    assert worker.run(_where())[0] is not first  # a new loop after close (first is kept alive)
    worker.close()
