"""Fair execution across sessions: a cell that blocks costs only its own session.

Each coding session runs on a thread of its own (``Execution.DEDICATED_THREAD``), so
no shared pool can be exhausted by one client. Before, 40 sessions whose cells slept
held 32 shared threads and a 41st session's ``1 + 1`` waited for one of them.

The test asserts order, not speed: the 41st session's step completes while all 40
sleeping cells are still running (they sleep 8 s; nothing else bounds it). The latency
figure is measured by ``bench/bench_coding_fairness.py`` (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio

import pytest
from _coding_fixtures import served
from coding_env import MODELS, CodeAction

from openenv import AsyncEnvClient

pytestmark = pytest.mark.timeout(180)

SLEEPERS = 40
SLEEP_S = 8


async def _episode(url: str) -> AsyncEnvClient:  # type: ignore[type-arg]
    client = AsyncEnvClient(url, MODELS)
    await client.connect()
    await client.reset(task_id="two_sum")
    return client


async def _fairness(url: str) -> None:
    clients = await asyncio.gather(*(_episode(url) for _ in range(SLEEPERS + 1)))
    try:
        *sleepers, probe = clients
        sleeping = [
            asyncio.ensure_future(c.step(CodeAction(code=f"import time; time.sleep({SLEEP_S})")))
            for c in sleepers
        ]
        await asyncio.sleep(1.0)  # let the 40 cells start (were they not, the test only gets easier)
        result = await probe.step(CodeAction(code="1 + 1"))
        still_sleeping = sum(not t.done() for t in sleeping)
        assert result.observation.result == "2"
        assert still_sleeping == SLEEPERS
        for done in await asyncio.gather(*sleeping):
            assert done.observation.exception is None
    finally:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)


def test_forty_blocked_sessions_do_not_delay_a_forty_first() -> None:
    with served("auto", pool_size=4, cell_timeout_s=30.0, nproc=256) as url:
        asyncio.run(_fairness(url))
