"""``/mcp`` and ``{"type": "mcp"}`` frames for a ``McpToolEnvironment``: its own tools.

Our MCP bridge (``openenv.mcp``) publishes an env's *actions* as tools. An upstream MCP
env has tools of its own (FastMCP), and its users' clients call them by name: this
endpoint answers ``tools/list`` and ``tools/call`` from the env instance of the
caller's session (``session_id`` in the params, or the session the WebSocket is bound
to; without one, a fresh instance made for the call) and hands every other request
(``openenv/session/create``, the SDK's streamable HTTP...) to the bridge unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..server._jsonrpc import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    JsonRpcErrorCode,
    envelope_error,
    read_body,
    rpc_error,
)
from ..server._openapi import ProtocolRoute
from ..server._upstream_models import CallToolAction, ListToolsAction

if TYPE_CHECKING:
    from starlette.routing import BaseRoute
    from starlette.types import Receive, Scope, Send

    from .._env import EnvClass
    from ..server._mounts import ProtocolEndpoint
    from ..server._sessions import Session, SessionManager
    from ..server._settings import ServerSettings

_OWN_METHODS = frozenset({"tools/list", "tools/call"})


def _tool_dump(tool: Any) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}


def _result_dump(result: Any) -> Any:
    dump = getattr(result, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    if hasattr(result, "content"):  # FastMCP's CallToolResult (a dataclass)
        content = [c.model_dump(mode="json") if hasattr(c, "model_dump") else c for c in result.content]
        return {
            "content": content,
            "structuredContent": getattr(result, "structured_content", None),
            "isError": bool(getattr(result, "is_error", False)),
            "data": getattr(result, "data", None),
        }
    return result


class UpstreamMcpEndpoint:
    """A ``ProtocolEndpoint``: the env's FastMCP tools first, the bridge for the rest."""

    def __init__(self, env_class: EnvClass, manager: SessionManager, inner: ProtocolEndpoint | None) -> None:
        self.env_class = env_class
        self.manager = manager
        self.inner = inner

    @property
    def routes(self) -> Sequence[BaseRoute]:
        return [ProtocolRoute("/mcp", self, methods=["GET", "POST", "DELETE"], headers={}, name="mcp")]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        if self.inner is None:
            yield
            return
        async with self.inner.running():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            await self._pass(scope, receive, send, b"")
            return
        body = await read_body(receive)
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            request = None
        if not (isinstance(request, dict) and request.get("method") in _OWN_METHODS):
            await self._pass(scope, receive, send, body)
            return
        payload = orjson.dumps(await self.answer(request, None))
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _pass(self, scope: Scope, receive: Receive, send: Send, body: bytes) -> None:
        """Hand the request, with the body already read, to the bridge."""
        if self.inner is None:
            payload = orjson.dumps(rpc_error(None, METHOD_NOT_FOUND, "Method not found"))
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": payload})
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.inner(scope, replay if scope.get("method") == "POST" else receive, send)  # type: ignore[operator]

    async def ws_message(self, request: Any, session: Session | None) -> dict[str, Any] | None:
        if isinstance(request, dict) and request.get("method") in _OWN_METHODS:
            return await self.answer(request, session)
        if self.inner is None:
            return None
        return await self.inner.ws_message(request, session)

    async def answer(self, request: dict[str, Any], session: Session | None) -> dict[str, Any]:
        """The JSON-RPC reply to ``tools/list`` / ``tools/call``."""
        bad = envelope_error(request)
        rid = request.get("id")
        if bad is not None:
            return bad
        params = request.get("params") or {}
        if not isinstance(params, dict):
            return rpc_error(rid, INVALID_PARAMS, "params must be an object")
        if request["method"] == "tools/list":
            action: ListToolsAction | CallToolAction = ListToolsAction()
        elif not isinstance(params.get("name"), str):
            return rpc_error(rid, INVALID_PARAMS, "tools/call needs a tool 'name'")
        else:
            arguments = params.get("arguments") or {}
            if not isinstance(arguments, dict):
                return rpc_error(rid, INVALID_PARAMS, "'arguments' must be an object")
            action = CallToolAction(tool_name=params["name"], arguments=arguments)
        sid = params.get("session_id")
        if session is None and isinstance(sid, str):
            try:
                session = self.manager.get(sid)
            except Exception as exc:
                return rpc_error(rid, INVALID_PARAMS, f"unknown session_id: {exc}")
        obs = await self._tool_step(action, session)
        if isinstance(action, ListToolsAction):
            return {"jsonrpc": "2.0", "id": rid, "result": {"tools": [_tool_dump(t) for t in obs.tools]}}
        if obs.error is not None:
            error = {
                "code": JsonRpcErrorCode.SERVER_ERROR.value,
                "message": obs.error.message,
                "data": {"error_type": obs.error.error_type.value},
            }
            return {"jsonrpc": "2.0", "id": rid, "error": error}
        return {"jsonrpc": "2.0", "id": rid, "result": _result_dump(obs.result)}

    async def _tool_step(self, action: ListToolsAction | CallToolAction, session: Session | None) -> Any:
        if session is not None:
            upstream = session._handle.env.env  # our adapter's wrapped upstream env
            return await upstream._tool_step(action, None)
        upstream = getattr(self.env_class, "factory")()  # noqa: B009 - the adapter's, not on EnvClass
        try:
            return await upstream._tool_step(action, None)
        finally:
            upstream.close()


def upstream_mcp_endpoint(
    env_class: EnvClass, manager: SessionManager, settings: ServerSettings
) -> UpstreamMcpEndpoint:
    """The endpoint factory the server plugs in for a ``McpToolEnvironment``."""
    try:
        from ._http import mcp_endpoint
    except ImportError:  # the mcp extra is not installed: the env's own tools only
        inner = None
    else:
        inner = mcp_endpoint(env_class, manager, settings)
    return UpstreamMcpEndpoint(env_class, manager, inner)
