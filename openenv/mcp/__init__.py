"""The MCP bridge (the ``mcp`` extra): every env is an MCP server, any MCP server an env.

* Every env server answers standard MCP at ``/mcp`` (streamable HTTP, both the
  2026-07-28 sessionless protocol and ``initialize`` sessions); ``openenv mcp TARGET``
  serves an env over stdio. ``EnvMcpServer`` is the server behind both.
* ``McpServerEnv`` wraps an external MCP server (a command or a URL) as an env whose
  actions are ``ToolCall``s and observations ``ToolResult``s; ``mcp_server_env``
  binds one server to a class that ``create_app`` / ``openenv serve`` can serve.

The models import without the SDK; everything else loads it on first use.
"""

from __future__ import annotations

import typing

from .._lazy import lazy_exports as _lazy_exports
from ._models import MCP_MODELS, McpState, ToolCall, ToolResult

if typing.TYPE_CHECKING:
    from ._bridge import RESET_META_KEY, SESSION_ARG, EnvMcpServer
    from ._server_env import McpConnection, McpServerEnv, mcp_server_env
    from ._stdio import serve_stdio

__all__ = [
    "MCP_MODELS",
    "RESET_META_KEY",
    "SESSION_ARG",
    "EnvMcpServer",
    "McpConnection",
    "McpServerEnv",
    "McpState",
    "ToolCall",
    "ToolResult",
    "mcp_server_env",
    "serve_stdio",
]

_LAZY = {
    "RESET_META_KEY": "._bridge",
    "SESSION_ARG": "._bridge",
    "EnvMcpServer": "._bridge",
    "McpConnection": "._server_env",
    "McpServerEnv": "._server_env",
    "mcp_server_env": "._server_env",
    "serve_stdio": "._stdio",
}


def _require_sdk(name: str) -> None:
    from .._extras import require

    require("mcp", extra="mcp", feature=f"openenv.mcp.{name}")


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, __all__, check=_require_sdk)
