"""Scripted policies for the eval tests (named as ``python:tests.eval._policies:NAME``)."""

from __future__ import annotations

import random
import time
from typing import Any


def seeded_echo(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """A message drawn from the episode's seed and the turn: the same pair, the same play."""
    rng = random.Random(f"{episode.seed}-{observation.get('message_length', 0)}")
    return {"message": "x" * rng.randint(1, 12)}


def slow_seeded_echo(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """``seeded_echo`` that takes 50 ms (a run lasts long enough to be killed halfway)."""
    time.sleep(0.05)
    return seeded_echo(observation, episode)


def ten_chars(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """Reward 1.0 a step on the echo env (0.1 a character)."""
    return {"message": "abcdefghij"}


def script_tag(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """A message that would end an inline script if embedded carelessly."""
    return {"message": "</script><b>x</b>"}
