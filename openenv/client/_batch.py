"""Items of a mixed batch: resets, steps, state reads and closes in one frame.

    results = client.batch([Reset("a", seed=1), Step("b", action), GetState("c"), Close("d")])

Each item names its session; the reply lists one outcome per item in order (a
``StepResult`` for ``Reset``/``Step``, the state for ``GetState``, None for ``Close``).
Items for the same session run in order; different sessions run concurrently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Reset:
    """Start an episode on ``session`` (created if new) with its own seed and options."""

    session: str
    seed: int | None = None
    episode_id: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class Step:
    session: str
    action: Any
    timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class GetState:
    """Read the state of ``session`` (not ``openenv.State``, the state model)."""

    session: str
    timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class Close:
    session: str


BatchItem = Reset | Step | GetState | Close
