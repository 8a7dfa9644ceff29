"""Settings that bound what a caller can ask of the env."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _browser_fixtures import needs_chromium
from browser_env import NoopAction
from browser_env import env as env_module
from browser_env.env import BrowserEnv


class _Waits:
    """Stands for ``asyncio`` in ``browser_env.env``: records each ``sleep`` the env asks
    for (the noop's wait), then sleeps it. The wait is read from the env's own request,
    not from a clock a loaded host stretches."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    async def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        await asyncio.sleep(seconds)


def test_max_wait_ms_is_validated() -> None:
    with pytest.raises(TypeError, match="max_wait_ms"):
        BrowserEnv(max_wait_ms=-1)
    with pytest.raises(TypeError, match="max_wait_ms"):
        BrowserEnv(max_wait_ms=10_001)


@needs_chromium
@pytest.mark.timeout(120)
async def test_a_noop_waits_at_most_max_wait_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    waits = _Waits()
    monkeypatch.setattr(env_module, "asyncio", waits)
    env = BrowserEnv(max_wait_ms=0)
    try:
        await env.reset(options={"task_id": "click-test"})
        waits.asked.clear()
        obs = await env.step(NoopAction(wait_ms=10_000))
        assert obs.last_action_error is None
        assert waits.asked == [0.0]  # asked for 10 s, capped at max_wait_ms 0
    finally:
        await env.close()


@needs_chromium
@pytest.mark.timeout(120)
async def test_a_step_deadline_bounds_a_noop_and_a_turk_task_has_a_text_goal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step's ``timeout_s`` (RFC 0001 section 4.5) caps a ``noop``'s wait, leaving time
    to read the page; and a natural-language MiniWoB task (its utterance an object) gives
    a text ``goal`` (its reset was a 500, found by the fuzzer walking every task id)."""
    waits = _Waits()
    monkeypatch.setattr(env_module, "asyncio", waits)
    env = BrowserEnv()  # max_wait_ms 10 s
    try:
        # seeded: the same instance every run (unseeded, MiniWoB draws one at random)
        obs = await env.reset(seed=1, options={"task_id": "email-inbox-nl-turk"})
        assert isinstance(obs.goal, str)
        # the utterance's text ("Forward ... email", "Text ... to ..."), not the object
        # (its fields) written out
        assert obs.goal.strip()
        assert "{" not in obs.goal
        assert "utterance" not in obs.goal
        assert obs.goal.split()[0] in obs.text  # the page shows it as the task's query
        waits.asked.clear()
        obs = await env.step(NoopAction(wait_ms=10_000), timeout_s=0.5)
        assert obs.last_action_error is None
        # asked for 10 s; the deadline leaves half of its 0.5 s to read the page
        assert waits.asked == [pytest.approx(0.25)]
    finally:
        await env.close()
