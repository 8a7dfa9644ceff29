"""Turn-based agentic harnesses (upstream's RFC 005): config, events, the adapter interface.

An ``AgenticHarnessAdapter`` owns one external agent (Claude Code, mini-swe-agent, ...):
``start`` readies it, each ``send_message`` is one conversational turn (the agent runs
its own loop and answers), ``stop`` ends it. ``HarnessEnvironment`` makes an env of
one. Names, fields and event types are upstream's (``openenv.core.harness``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._exceptions import OpenEnvError

__all__ = [
    "AgenticHarnessAdapter",
    "HarnessClientMessage",
    "HarnessConfig",
    "HarnessError",
    "HarnessEvent",
    "HarnessEventType",
    "HarnessNotRunningError",
    "HarnessProtocolError",
    "HarnessResponse",
    "HarnessStartupError",
    "HarnessTransport",
    "HarnessTurnTimeoutError",
    "events_to_metadata",
]


class HarnessError(OpenEnvError):
    """An agentic harness failed (upstream's name)."""


class HarnessStartupError(HarnessError):
    """The harness could not start or get ready in time."""


class HarnessNotRunningError(HarnessError):
    """A turn was asked of a harness that is not running."""


class HarnessTurnTimeoutError(HarnessError):
    """One turn ran past its wall-clock budget."""


class HarnessTransport(StrEnum):
    """How a harness talks to its adapter."""

    STDIO = "stdio"
    STREAMABLE_HTTP = "http"
    MCP = "mcp"


class HarnessConfig(BaseModel):
    """How to start one harness: ``name`` (``"claude-code"``), its ``command`` (non-empty),
    where it works, extra variables, the startup and per-turn time limits, the model."""

    model_config = ConfigDict(extra="forbid")

    name: str
    command: list[str]
    working_directory: str = "/workspace"
    env_vars: dict[str, str] = Field(default_factory=dict)
    transport: HarnessTransport = HarnessTransport.STDIO
    mcp_config_path: str | None = None
    startup_timeout_s: float = 30.0
    session_timeout_s: float = 600.0
    model: str | None = None
    api_key_env_var: str | None = None

    @field_validator("command")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("command must contain at least one element")
        return value


class HarnessEventType(StrEnum):
    """What happened during a turn."""

    LLM_REQUEST = "llm_request"
    LLM_RESPONSE = "llm_response"
    LLM_CHUNK = "llm_chunk"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    TEXT_OUTPUT = "text_output"
    ERROR = "error"
    TURN_COMPLETE = "turn_complete"


class HarnessEvent(BaseModel):
    """One event of a turn; ``data`` keys by type as upstream's (``TOOL_CALL``:
    ``tool_name``, ``arguments``; ``TURN_COMPLETE``: ``response``, ``done``; ...)."""

    type: HarnessEventType
    timestamp: float = Field(default_factory=time.time)
    data: dict[str, Any] = Field(default_factory=dict)


class HarnessResponse(BaseModel):
    """A whole turn: the text answer, its events, whether the harness is done."""

    response: str
    events: list[HarnessEvent] = Field(default_factory=list)
    done: bool = False


class HarnessClientMessage(BaseModel):
    """A client frame on the ``/harness`` WebSocket: ``{"type": "message", "content": ...}``."""

    type: Literal["message"]
    content: str


class HarnessProtocolError(BaseModel):
    """A rejected client frame on ``/harness`` (no turn started; the connection stays usable)."""

    type: Literal["protocol_error"] = "protocol_error"
    data: dict[str, Any]


def events_to_metadata(events: list[HarnessEvent]) -> list[dict[str, Any]]:
    """Events as JSON-ready dicts, for an observation's metadata."""
    return [event.model_dump(mode="json") for event in events]


class AgenticHarnessAdapter(ABC):
    """One external agent, turn by turn (see the module doc). ``BUILTIN_TOOL_NAMES``: the
    agent's own tools, which injected env tools must not shadow."""

    BUILTIN_TOOL_NAMES: frozenset[str] = frozenset()

    def __init__(self, config: HarnessConfig) -> None:
        self.config = config

    @abstractmethod
    async def start(self, working_directory: str) -> None:
        """Start the harness (``HarnessStartupError`` when it cannot)."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop it and free what it holds; a no-op when not running."""

    @abstractmethod
    async def inject_tools(self, tools: list[Any], bridge_url: str | None = None) -> None:
        """Offer the env's tools to the harness (before ``start``)."""

    @abstractmethod
    def send_message_streaming(self, message: str) -> AsyncIterator[HarnessEvent]:
        """One turn's events, the last a ``TURN_COMPLETE`` carrying ``response`` (and ``done``)."""

    @abstractmethod
    async def is_alive(self) -> bool:
        """Whether the harness is running."""

    async def send_message(self, message: str) -> HarnessResponse:
        """One whole turn (drains ``send_message_streaming``).

        Raises:
            HarnessError: the events ended without ``TURN_COMPLETE``.
        """
        events = [event async for event in self.send_message_streaming(message)]
        if not events or events[-1].type is not HarnessEventType.TURN_COMPLETE:
            raise HarnessError("harness event stream ended without a TURN_COMPLETE event")
        last = events[-1]
        return HarnessResponse(
            response=str(last.data.get("response", "")),
            events=events,
            done=bool(last.data.get("done", False)),
        )
