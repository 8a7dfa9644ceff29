"""Scripted policies for the eval tests (named as ``python:tests.eval._policies:NAME``)."""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

#: The echo env's folder, what ``echo_run`` evaluates.
ECHO_ENV = Path(__file__).resolve().parents[2] / "envs" / "echo_env"


def seeded_echo(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """A message drawn from the episode's seed and the turn: the same pair, the same play."""
    rng = random.Random(f"{episode.seed}-{observation.get('message_length', 0)}")
    return {"message": "x" * rng.randint(1, 12)}


def slow_seeded_echo(observation: dict[str, Any], episode: Any) -> dict[str, Any] | Awaitable[dict[str, Any]]:
    """``seeded_echo`` that takes 50 ms. With ``OPENENV_TEST_HOLD_AFTER=N`` in the
    environment, the episodes this process meets after its first N are held (their action
    comes after 300 s): a run a test kills halfway cannot end meanwhile, however long the
    test's own poll waits for a CPU."""
    time.sleep(0.05)
    action = seeded_echo(observation, episode)
    if _held(episode):
        return _after(300.0, action)
    return action


_met: list[tuple[int, int]] = []
_met_lock = threading.Lock()


def _held(episode: Any) -> bool:
    hold_after = int(os.environ.get("OPENENV_TEST_HOLD_AFTER", "0"))
    if not hold_after:
        return False
    key = (episode.seed, episode.sample)
    with _met_lock:
        if key not in _met:
            _met.append(key)
        return _met.index(key) >= hold_after


async def _after(seconds: float, action: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(seconds)
    return action


def ten_chars(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """Reward 1.0 a step on the echo env (0.1 a character)."""
    return {"message": "abcdefghij"}


def script_tag(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """A message that would end an inline script if embedded carelessly."""
    return {"message": "</script><b>x</b>"}


_failures: dict[tuple[int, int], int] = {}


def flaky(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """Fails twice per episode seed with a connection error (transient), then plays."""
    key = (episode.seed, episode.sample)
    _failures[key] = _failures.get(key, 0) + 1
    if _failures[key] <= 2:
        raise ConnectionError(f"model server went away ({_failures[key]})")
    return {"message": "abcdefghij"}


#: (seed, sample) -> when each attempt of ``flaky_timed`` was called (time.monotonic()).
attempts_at: dict[tuple[int, int], list[float]] = {}


def flaky_timed(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """``flaky`` that notes when each attempt was made (the backoff between them)."""
    key = (episode.seed, episode.sample)
    attempts_at.setdefault(key, []).append(time.monotonic())
    if len(attempts_at[key]) <= 2:
        raise ConnectionError(f"model server went away ({len(attempts_at[key])})")
    return {"message": "abcdefghij"}


def broken(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """Always a bug: not transient."""
    raise KeyError("no such field")


async def sleepy(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """Takes far longer than the tests' episode timeout."""
    import asyncio

    await asyncio.sleep(30)
    return {"message": "late"}


def _short(action: Any, observation: Any) -> float:
    return 1.0 if len(action.message) <= 5 else 0.0


def _echoed(action: Any, observation: Any) -> float:
    return 1.0 if observation.echoed_message == action.message else 0.0


def short_and_echoed() -> Any:
    from openenv.rewards import WeightedSum

    return WeightedSum({"short": _short, "echoed": _echoed}, weights=[0.5, 0.5])


RUBRIC = short_and_echoed()


def echo_run(out: Path, policy: str, **settings: Any) -> Path:
    """``run_eval`` of ``policy`` on the echo env, written to ``out``; ``settings``: the
    rest of its ``EvalConfig`` (count, samples, max_turns...). Returns ``out``."""
    from openenv.eval import EvalConfig, run_eval

    run_eval(EvalConfig(env=str(ECHO_ENV), policy=policy, out=out, **settings))
    return out
