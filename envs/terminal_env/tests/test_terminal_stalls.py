"""A shell that takes no input stalls only its own session, on a real ``openenv serve``.

A stopped shell (SIGSTOP) does not read its terminal: a long command fills the PTY's
input queue and the rest cannot be typed. The server must wait for room off the event
loop, give up at the command's timeout (a typed ``timed_out`` observation, the shell
restarted) and meanwhile serve every other session and ``/health`` as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psutil
import pytest
from _terminal_fixtures import LEVELS, served
from terminal_env import MODELS, RunAction, SendKeysAction

from openenv import AsyncEnvClient

pytestmark = pytest.mark.timeout(180)

#: Far more than a PTY holds (its input queue and the tty layer's buffer: ~68 KiB).
LONG = "echo " + "x" * 300_000 + " | wc -c"
#: A step of the victim or a /health call the stall must not reach. The stall it
#: guards against is seconds long (the old write loop slept on the event loop for 5 s,
#: here at least the stalled command's 2 s); an unstalled step takes milliseconds, and the
#: worst a loaded machine gave a step under the terminal chaos test was 0.47 s.
BOUND_S = 1.5


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with served(LEVELS[-1]) as replica:
        yield replica


def client(server: Any) -> AsyncEnvClient[Any, Any, Any]:
    return AsyncEnvClient(server.base_url, MODELS, timeout_s=60)


def _stopped_below(pid: int) -> list[int]:
    """The stopped processes (SIGSTOP) among the server's own descendants."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.status() == psutil.STATUS_STOPPED:
                found.append(child.pid)
    return found


async def stop_shell(server: Any, env: AsyncEnvClient[Any, Any, Any]) -> None:
    """Reset ``env`` to a free shell that stops itself right after this step; returns
    once the server's process tree shows it stopped."""
    await env.reset(free_shell=True)
    result = await env.step(RunAction(command="(sleep 0.2; kill -STOP $$) >/dev/null 2>&1 &"))
    assert result.observation.exit_code == 0
    for _ in range(600):
        if _stopped_below(server.proc.pid):
            return
        await asyncio.sleep(0.05)
    pytest.fail("the shell did not stop itself within 30 s")


async def victim_steps(
    server: Any, victim: AsyncEnvClient[Any, Any, Any], until: asyncio.Future[Any]
) -> list[float]:
    """Step ``victim`` and call /health until ``until`` is done: each one's seconds."""
    took = []
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        for _ in range(2000):  # bounded; ends when the stalled call does
            if until.done():
                break
            start = time.perf_counter()
            obs = (await victim.step(RunAction(command="echo hi"))).observation
            assert obs.output == "hi\n"
            took.append(time.perf_counter() - start)
            start = time.perf_counter()
            assert (await http.get("/health")).status_code == 200
            took.append(time.perf_counter() - start)
    return took


async def test_a_stopped_shell_fed_a_long_command_stalls_only_its_session(server: Any) -> None:
    stalled, victim = client(server), client(server)
    try:
        await victim.reset(free_shell=True)
        for _ in range(2):  # each time, not just the first
            await stop_shell(server, stalled)
            start = time.perf_counter()
            call = asyncio.ensure_future(stalled.step(RunAction(command=LONG, timeout_s=2)))
            took = await victim_steps(server, victim, call)
            assert len(took) > 4
            assert max(took) < BOUND_S, f"a step or /health took {max(took):.3f}s during the stall"
            obs = (await call).observation
            assert time.perf_counter() - start < 2 + 10  # its own timeout, then a restart
            assert obs.timed_out
            assert obs.session_restarted
            assert "took no input for 2s" in obs.output
            # the restarted shell takes a long command now
            back = (await stalled.step(RunAction(command=LONG, timeout_s=30))).observation
            assert back.exit_code == 0
            assert back.output == "300001\n"
    finally:
        await asyncio.gather(stalled.close(), victim.close())


async def test_keys_a_stopped_shell_cannot_take_time_out_without_a_restart(server: Any) -> None:
    stalled = client(server)
    try:
        await stop_shell(server, stalled)
        start = time.perf_counter()
        obs = (await stalled.step(SendKeysAction(keys="y" * 60_000 + "z" * 5000, timeout_s=1))).observation
        assert time.perf_counter() - start < 1 + 5
        assert obs.timed_out
        assert not obs.session_restarted
        assert "took no input for 1s" in obs.output
    finally:
        await stalled.close()
