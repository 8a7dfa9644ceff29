"""Reward functions served by a separate process in the tests."""

from __future__ import annotations

from typing import Any


def polite(action: Any, observation: Any) -> dict[str, Any]:
    """1.0 for a polite message; the parts travel as components."""
    please = 1.0 if "please" in action.message else 0.0
    short = 1.0 if observation.message_length <= 12 else 0.0
    return {"score": 0.5 * please + 0.5 * short, "components": {"please": please, "short": short}}


def length(action: Any, observation: Any) -> float:
    return float(len(action["message"]))
