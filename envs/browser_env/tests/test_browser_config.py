"""Settings that bound what a caller can ask of the env."""

from __future__ import annotations

import time

import pytest
from _browser_fixtures import needs_chromium
from browser_env import NoopAction
from browser_env.env import BrowserEnv


def test_max_wait_ms_is_validated() -> None:
    with pytest.raises(TypeError, match="max_wait_ms"):
        BrowserEnv(max_wait_ms=-1)
    with pytest.raises(TypeError, match="max_wait_ms"):
        BrowserEnv(max_wait_ms=10_001)


@needs_chromium
@pytest.mark.timeout(120)
async def test_a_noop_waits_at_most_max_wait_ms() -> None:
    env = BrowserEnv(max_wait_ms=0)
    try:
        await env.reset(options={"task_id": "click-test"})
        start = time.monotonic()
        obs = await env.step(NoopAction(wait_ms=10_000))
        took = time.monotonic() - start
        assert obs.last_action_error is None
        assert took < 8.0, took  # asked for 10 s, capped at 0: one observation (< 1 s unloaded)
    finally:
        await env.close()


@needs_chromium
@pytest.mark.timeout(120)
async def test_a_step_deadline_bounds_a_noop_and_a_turk_task_has_a_text_goal() -> None:
    """A step's ``timeout_s`` (RFC 0001 section 4.5) caps a ``noop``'s wait, leaving time
    to read the page; and a natural-language MiniWoB task (its utterance an object) gives
    a text ``goal`` (its reset was a 500, found by the fuzzer walking every task id)."""
    env = BrowserEnv()  # max_wait_ms 10 s
    try:
        obs = await env.reset(options={"task_id": "email-inbox-nl-turk"})
        assert isinstance(obs.goal, str)
        # the utterance's text (one drawn at random: "Forward ... email", "Text ... to ..."),
        # not the object (its fields) written out
        assert obs.goal.strip()
        assert "{" not in obs.goal
        assert "utterance" not in obs.goal
        assert obs.goal.split()[0] in obs.text  # the page shows it as the task's query
        start = time.monotonic()
        obs = await env.step(NoopAction(wait_ms=10_000), timeout_s=0.5)
        took = time.monotonic() - start
        assert obs.last_action_error is None
        assert took < 8.0, took  # asked for 10 s, waited 0.25 s: one observation (< 1 s unloaded)
    finally:
        await env.close()
