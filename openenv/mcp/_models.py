"""Models of an MCP server wrapped as an env (``McpServerEnv``): data only, no SDK."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .._models import Action, EnvModels, Observation, State


class ToolCall(Action):
    """Call one tool of the wrapped MCP server."""

    tool: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(Observation):
    """A tool's result: its text, its MCP content blocks and structured content.

    ``is_error`` is set when the tool failed, the arguments were refused, the tool is
    unknown, or the call ran past its timeout (``timed_out``). The reset observation
    lists the server's tools in ``metadata["tools"]`` (name, description, inputSchema).
    """

    tool: str = ""
    text: str = ""
    content: list[dict[str, Any]] = Field(default_factory=list)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    timed_out: bool = False


class McpState(State):
    """Episode state plus the names of the server's tools."""

    tools: list[str] = Field(default_factory=list)


MCP_MODELS = EnvModels(ToolCall, ToolResult, McpState)
