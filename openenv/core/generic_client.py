"""``GenericEnvClient``: upstream's dict-in, dict-out client, for any env server.

Observations and states come back as plain dicts; actions go as dicts (or models,
dumped). Our own untyped client is ``openenv.EnvClient(url)`` with ``GENERIC_MODELS``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .client_types import StepResult
from .env_client import EnvClient

__all__ = ["GenericAction", "GenericEnvClient"]


class GenericEnvClient(EnvClient[dict[str, Any], dict[str, Any], dict[str, Any]]):
    """An upstream-style client that needs no env package: dicts both ways.

    >>> with GenericEnvClient(base_url="http://127.0.0.1:8000") as env:  # doctest: +SKIP
    ...     result = env.step({"message": "hi"})
    """

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, dict):
            return action
        if isinstance(action, BaseModel):
            return action.model_dump()
        if hasattr(action, "__dict__"):
            return dict(vars(action))
        return dict(action)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[dict[str, Any]]:
        return StepResult(
            observation=payload.get("observation", {}),
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
            metadata=payload.get("metadata"),
            truncated=bool(payload.get("truncated", False)),
        )

    def _parse_state(self, payload: dict[str, Any]) -> dict[str, Any]:
        return payload


class GenericAction(dict[str, Any]):
    """A dict built from keyword arguments: ``GenericAction(message="hi")``."""

    def __init__(self, **fields: Any) -> None:
        super().__init__(fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.items())
        return f"GenericAction({inner})"
