"""The contract between a harness and an env: one ``ResourceSession`` per rollout.

A session offers the first prompt messages, a tool manifest, tool calls and a final
``verify``; a ``ResourceSessionFactory`` makes one isolated session per rollout. A
session whose agent runs its own loop (a CLI agent in a sandbox) is waited on and
asked for its captured model calls instead (``LoopOwningSession``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, Protocol, TypedDict, TypeVar, runtime_checkable

from ._types import Message, Tool, ToolResult, VerifyResult

__all__ = ["LoopOwningSession", "ResourceSession", "ResourceSessionFactory", "TraceEntry"]


class ResourceSession(ABC):
    """One rollout's env, seen through tools."""

    @abstractmethod
    def initial_messages(self) -> list[Message]:
        """The messages the rollout starts from (the task prompt)."""

    @abstractmethod
    def list_tools(self) -> list[Tool]:
        """The tools the model may call."""

    @abstractmethod
    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool call against the env."""

    @abstractmethod
    def verify(self, transcript: list[Message], final_state: Any | None = None) -> VerifyResult:
        """The rollout's outcome once the harness stopped: the env's reward, metrics, artifacts."""

    @abstractmethod
    def close(self) -> None:
        """Release the env (idempotent)."""


SessionT = TypeVar("SessionT", bound=ResourceSession, covariant=True)


class ResourceSessionFactory(ABC, Generic[SessionT]):
    """Makes one isolated session per rollout (subclass as ``ResourceSessionFactory[MySession]``)."""

    @abstractmethod
    def create(self, task: Any, seed: int | None = None, episode_id: str | None = None) -> SessionT:
        """A fresh session for ``task``, reset with ``seed`` and ``episode_id`` when given."""


class TraceEntry(TypedDict, total=False):
    """One captured model call of a loop-owning rollout; every key is optional.

    ``completion_token_ids`` and ``per_token_logps`` are aligned when both are present;
    ``prompt_token_ids`` is the engine's own tokenization of the prompt (use it, do not
    re-render); ``loss_mask`` covers prompt + completion; ``reward`` mirrors ``verify``
    and ``None`` means unscored (never read it as 0.0).
    """

    request: dict[str, Any]
    response: dict[str, Any]
    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    completion_tokens: list[str]
    per_token_logps: list[float]
    loss_mask: list[int]
    reward: float | None
    metadata: dict[str, Any]


@runtime_checkable
class LoopOwningSession(Protocol):
    """A session whose agent drives itself: wait for it, then read back its model calls."""

    def wait_for_completion(self, timeout_s: float | None = ...) -> int: ...

    def fetch_proxy_trace(self) -> list[TraceEntry]: ...
