"""Data models shared by environments, server and clients.

``Action``, ``Observation`` and ``State`` keep upstream OpenEnv's field names so the
JSON Schemas published at ``/schema`` read the same to upstream tooling. Our one
addition is ``Observation.truncated``: ``done`` stays upstream's "the episode is over"
flag, and ``truncated`` says it ended on a limit rather than in a terminal state
(Gymnasium's distinction). ``terminated`` is derived: ``done and not truncated``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field


class Action(BaseModel):
    """Base class of an environment's action model. Unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid")

    metadata: dict[str, Any] = Field(default_factory=dict)


class Observation(BaseModel):
    """Base class of an environment's observation model.

    ``reward``, ``done`` and ``truncated`` travel beside the observation on the wire,
    not inside it; the clients put them back on the model they build.
    """

    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")

    done: bool = False
    truncated: bool = False
    reward: bool | int | float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class State(BaseModel):
    """Episode state returned by ``state``. Extra fields are allowed."""

    model_config = ConfigDict(extra="allow")

    episode_id: str | None = None
    step_count: int = Field(default=0, ge=0)


class EnvironmentMetadata(BaseModel):
    """What ``GET /metadata`` returns (upstream's field names)."""

    name: str
    description: str
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None


ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


@dataclass(frozen=True, slots=True)
class EnvModels(Generic[ActT, ObsT, StateT]):
    """The three model classes of one environment, handed to a client.

    ``dict`` for all three gives the untyped client (``GENERIC_MODELS``).
    """

    action: type[ActT]
    observation: type[ObsT]
    state: type[StateT]


GENERIC_MODELS: EnvModels[dict[str, Any], dict[str, Any], dict[str, Any]] = EnvModels(dict, dict, dict)


class StepResult(Generic[ObsT]):
    """What a client's ``reset`` and ``step`` return.

    One source of truth for the episode signals: with a typed observation (an
    ``Observation`` model, which carries ``reward``/``done``/``truncated`` as upstream's
    model does) ``reward``, ``terminated`` and ``truncated`` read the observation; with a
    plain dict observation (the generic client) they are kept here. ``done`` is
    ``terminated or truncated``. ``metadata`` is the observation's metadata.
    """

    __slots__ = ("_signals", "metadata", "observation")

    def __init__(
        self,
        observation: ObsT,
        reward: float | None = None,
        terminated: bool = False,
        truncated: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.observation = observation
        self.metadata = {} if metadata is None else metadata
        self._signals: tuple[float | None, bool, bool] | None = (
            None if isinstance(observation, Observation) else (reward, terminated, truncated)
        )

    @property
    def reward(self) -> float | None:
        if self._signals is None:
            return self.observation.reward  # type: ignore[attr-defined,no-any-return]
        return self._signals[0]

    @property
    def truncated(self) -> bool:
        if self._signals is None:
            return bool(self.observation.truncated)  # type: ignore[attr-defined]
        return self._signals[2]

    @property
    def terminated(self) -> bool:
        if self._signals is None:
            obs: Observation = self.observation  # type: ignore[assignment]
            return obs.done and not obs.truncated
        return self._signals[1]

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def __repr__(self) -> str:
        return (
            f"StepResult(observation={self.observation!r}, reward={self.reward!r}, "
            f"terminated={self.terminated}, truncated={self.truncated})"
        )
