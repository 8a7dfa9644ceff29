"""``/mcp`` and ``{"type": "mcp"}`` frames: the MCP bridge when installed, else a stub.

With the ``mcp`` extra, ``mcp_mount`` serves the official SDK's streamable HTTP at
``/mcp`` (and upstream OpenEnv's plain JSON-RPC dialect; see ``openenv.mcp``). Without
it, every well-formed request gets upstream's "Environment does not support MCP"
error and malformed ones the JSON-RPC codes, as upstream answers for an env with no
MCP tools.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute, Route

if TYPE_CHECKING:
    from .._env import EnvClass
    from ._sessions import Session, SessionManager
    from ._settings import ServerSettings

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_TOOL_METHODS = frozenset({"tools/list", "tools/call"})


def rpc_error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message, "data": None}}


def mcp_not_supported(request: Any) -> dict[str, Any]:
    """Answer one JSON-RPC request object for an env without MCP tools."""
    if (
        not isinstance(request, dict)
        or request.get("jsonrpc") != "2.0"
        or not isinstance(request.get("method"), str)
    ):
        rid = request.get("id") if isinstance(request, dict) else None
        return rpc_error(rid, INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 request")
    rid = request.get("id")
    if request["method"] in _TOOL_METHODS:
        return rpc_error(rid, INTERNAL_ERROR, "Environment does not support MCP")
    return rpc_error(rid, METHOD_NOT_FOUND, f"Method not found: {request['method']}")


class McpMount:
    """What an env app needs for MCP: its routes, a lifespan part, and the WS hook."""

    def __init__(self, endpoint: Any = None) -> None:
        self.endpoint = endpoint

    @property
    def routes(self) -> list[BaseRoute]:
        if self.endpoint is None:
            return []  # HttpApi's POST /mcp stub answers
        return [Route("/mcp", self.endpoint, methods=["GET", "POST", "DELETE"])]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        if self.endpoint is None:
            yield
            return
        async with self.endpoint.running():
            yield

    async def ws_message(self, request: Any, session: Session | None) -> dict[str, Any]:
        """The reply ``data`` for a ``{"type": "mcp"}`` message on a WebSocket."""
        if self.endpoint is None:
            return mcp_not_supported(request)
        reply: dict[str, Any] = await self.endpoint.ws_message(request, session)
        return reply


def mcp_mount(env_class: EnvClass, manager: SessionManager, settings: ServerSettings) -> McpMount:
    """The MCP bridge for one env app when the ``mcp`` extra is installed, else the stub.

    The bridge costs nothing until ``/mcp`` is first requested.
    """
    if importlib.util.find_spec("mcp") is None:
        return McpMount()
    from ..mcp._http import McpEndpoint

    return McpMount(McpEndpoint(env_class, manager, settings))
