"""Env tools to an agent over MCP (RFC 005): ``HarnessMCPBridge``, ``resolve_tool_conflicts``.

A ``ToolSource`` is anything with ``list_tools() -> list[Tool]`` and ``call_tool(name,
arguments) -> ToolResult`` (each sync, or ``async def``): a ``ResourceSession`` is one;
``FastMCPTools`` makes one of a FastMCP server (upstream's envs keep their tools there). The
bridge serves its tools, and nothing else, as an MCP server over streamable HTTP on
``http://127.0.0.1:PORT/mcp`` (a port of its own, on a thread of its own): the agent
lists and calls the env's tools there, never ``reset``/``step``/``state``, which live on
another server. A sandboxed agent reaches it through a unix socket relayed into its
sandbox (``run_agent(tools_url=...)``), as it reaches its model.

It answers only requests whose ``Host`` (and ``Origin``) name loopback, 403 otherwise
(a web page's DNS rebinding), and in JSON (no event stream): ``initialize`` (the
handshake versions 2024-11-05 to 2025-11-25), ``ping``, ``tools/list``, ``tools/call``; notifications get
202, ``GET``/``DELETE`` 405, anything else a JSON-RPC error. A tool that raises answers a
result with ``isError`` (the agent sees why); an unknown tool or bad arguments are
JSON-RPC errors. Calls run one at a time (an agent's parallel calls wait their turn: an
env session steps once at a time); every call is kept in ``trace`` (``ToolTraceEntry``s,
in order).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import socket
import threading
import time
from collections.abc import Collection
from typing import Any, Protocol

import orjson

from ..server._jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    read_body,
    rpc_error,
)
from ._agentic import HarnessError
from ._types import RESERVED_TOOL_NAMES, Tool, ToolResult, ToolTraceEntry, message_content

__all__ = [
    "FastMCPTools",
    "HarnessMCPBridge",
    "ToolSource",
    "call_tool_result",
    "list_tools",
    "resolve_tool_conflicts",
]

_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


class ToolSource(Protocol):
    """What a bridge serves: a list of tools and a way to call one."""

    def list_tools(self) -> Any: ...  # list[Tool], or an awaitable of one

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any: ...  # ToolResult (or awaitable)


class FastMCPTools:
    """A FastMCP server's tools as a ``ToolSource`` (each request through an in-memory client)."""

    def __init__(self, server: Any) -> None:
        self.server = server

    async def list_tools(self) -> list[Tool]:
        from fastmcp import Client

        async with Client(self.server) as client:
            tools = await client.list_tools()
        return [
            Tool(name=t.name, description=t.description or "", input_schema=dict(_schema(t))) for t in tools
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        from fastmcp import Client

        async with Client(self.server) as client:
            result = await client.call_tool(name, arguments, raise_on_error=False)
        text = "".join(str(getattr(c, "text", "")) for c in result.content)
        data = result.structured_content if result.structured_content is not None else text
        return ToolResult(data=data, error=text or "the tool failed" if result.is_error else None)


def _schema(tool: Any) -> Any:
    schema = getattr(tool, "input_schema", None)
    return schema if schema is not None else getattr(tool, "inputSchema", {})


async def list_tools(source: ToolSource) -> list[Tool]:
    """``source.list_tools()``, sync (on a worker thread) or ``async def``."""
    if inspect.iscoroutinefunction(source.list_tools):
        tools: list[Tool] = await source.list_tools()
        return tools
    return await asyncio.to_thread(source.list_tools)


def resolve_tool_conflicts(
    env_tools: list[Tool], harness_builtin_tools: Collection[str], prefix: str = "env_"
) -> list[Tool]:
    """The env's tools named so none shadows one of the agent's own: a clash gets ``prefix``.

    Raises:
        ValueError: a reserved name (``reset``, ``step``...), a name given twice, or a
            prefixed name that is taken too.
    """
    names = [tool.name for tool in env_tools]
    reserved = sorted(set(names) & RESERVED_TOOL_NAMES)
    if reserved:
        raise ValueError(f"Tool names are reserved for the env's own operations: {', '.join(reserved)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"Duplicate environment tool name: {', '.join(twice)}")
    builtin, out, taken = set(harness_builtin_tools), [], set()
    for tool in env_tools:
        name = tool.name
        if name in builtin:
            name = prefix + name
            if name in builtin or name in names:
                raise ValueError(
                    f"Cannot resolve tool name conflict: {tool.name!r} and {name!r} are both taken"
                )
        if name in taken:
            raise ValueError(f"Tool name conflict after prefixing: {name}")
        taken.add(name)
        out.append(tool.model_copy(update={"name": name}))
    return out


def _plain(value: Any) -> Any:
    """Data as JSON-ready values (models dumped, anything else unknown as its text)."""
    return orjson.loads(orjson.dumps(value, default=_default))


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def call_tool_result(result: ToolResult) -> dict[str, Any]:
    """A ``ToolResult`` as MCP's ``CallToolResult``: its text, its data when an object."""
    plain = ToolResult(data=_plain(result.data), done=result.done, error=result.error)
    out: dict[str, Any] = {
        "content": [{"type": "text", "text": message_content(plain)}],
        "isError": result.error is not None,
    }
    if isinstance(plain.data, dict):
        out["structuredContent"] = plain.data
    return out


class _Rpc:
    """The JSON-RPC side: one request object in, one response object (or None) out."""

    def __init__(self, source: ToolSource, renames: dict[str, str], loop: asyncio.AbstractEventLoop | None):
        self.source, self.renames, self.loop = source, renames, loop
        self.trace: list[ToolTraceEntry] = []
        self._tools: list[Tool] | None = None
        self._one_at_a_time = asyncio.Lock()  # an env session steps once at a time

    async def tools(self) -> list[Tool]:
        if self._tools is None:
            served = {source: name for name, source in self.renames.items()}
            listed = await self._on_source_loop(list_tools(self.source))
            self._tools = [t.model_copy(update={"name": served.get(t.name, t.name)}) for t in listed]
        return self._tools

    async def _on_source_loop(self, coro: Any) -> Any:
        """Await ``coro`` on the source's event loop (an async env lives there), else here."""
        if self.loop is None or self.loop is asyncio.get_running_loop():
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    async def handle(self, request: Any) -> dict[str, Any] | None:
        if not isinstance(request, dict) or request.get("jsonrpc") != "2.0":
            return rpc_error(None, INVALID_REQUEST, "Invalid Request")
        method, rid = request.get("method"), request.get("id")
        if "id" not in request:  # a notification (initialized, cancelled...): nothing to answer
            return None
        params = request.get("params") or {}
        if not isinstance(method, str) or not isinstance(params, dict):
            return rpc_error(rid, INVALID_REQUEST, "Invalid Request")
        if method == "initialize":
            asked = params.get("protocolVersion")
            result: Any = {
                "protocolVersion": asked if asked in _VERSIONS else _VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "openenv-env-tools", "version": "1"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            tools = await self.tools()
            result = {
                "tools": [
                    {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                    for t in tools
                ]
            }
        elif method == "tools/call":
            return await self._call(params, rid)
        else:
            return rpc_error(rid, METHOD_NOT_FOUND, f"Method not found: {method}")
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    async def _call(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return rpc_error(rid, INVALID_PARAMS, "tools/call needs a tool name and an arguments object")
        if name not in {t.name for t in await self.tools()}:
            return rpc_error(rid, INVALID_PARAMS, f"Unknown tool: {name}")
        source_name = self.renames.get(name, name)
        try:
            async with self._one_at_a_time:
                result = await self._run(source_name, dict(arguments))
        except Exception as exc:  # the env's failure: the agent reads why, as a tool error
            result = ToolResult(error=f"{type(exc).__name__}: {exc}")
        if not isinstance(result, ToolResult):
            result = ToolResult(data=result)
        result = ToolResult(_plain(result.data), result.done, _plain(result.metadata), result.error)
        self.trace.append(ToolTraceEntry(source_name, dict(arguments), result))
        return {"jsonrpc": "2.0", "id": rid, "result": call_tool_result(result)}

    async def _run(self, name: str, arguments: dict[str, Any]) -> Any:
        call = self.source.call_tool
        if not inspect.iscoroutinefunction(call):
            return await asyncio.to_thread(call, name, arguments)
        return await self._on_source_loop(call(name, arguments))


_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})


def _local(scope: Any) -> bool:
    """Whether the ``Host`` (and ``Origin``, if any) name loopback (a request without a
    ``Host`` is a client that names no host at all: allowed)."""
    for key, value in scope.get("headers", ()):
        if key in (b"host", b"origin"):
            text = value.decode("latin-1").lower()
            hostport = text.split("://", 1)[-1] if text != "null" else "localhost"
            host = hostport if hostport.endswith("]") else hostport.rsplit(":", 1)[0]
            if host not in _LOCAL_HOSTS:
                return False
    return True


def _app(rpc: _Rpc) -> Any:
    """The ASGI app: ``/mcp`` only (see the module doc)."""

    async def reply(send: Any, status: int, body: bytes = b"", allow: bool = False) -> None:
        headers = [(b"content-type", b"application/json")] if body else []
        if allow:
            headers.append((b"allow", b"POST"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if not _local(scope):  # DNS rebinding: a page that names another host reaches no tool
            await reply(send, 403, orjson.dumps({"error": "the tools answer loopback hosts only"}))
            return
        if scope.get("path", "").rstrip("/") != "/mcp":
            await reply(send, 404, orjson.dumps({"error": "not found: the tools are at /mcp"}))
            return
        if scope.get("method") != "POST":  # no server-initiated stream
            await reply(send, 405, allow=True)
            return
        body = await read_body(receive)
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            await reply(send, 400, orjson.dumps(rpc_error(None, PARSE_ERROR, "Parse error")))
            return
        if isinstance(request, list):  # a batch (2025-03-26)
            answers = [a for a in [await rpc.handle(r) for r in request] if a is not None]
            await reply(send, 200, orjson.dumps(answers)) if answers else await reply(send, 202)
            return
        answer = await rpc.handle(request)
        await reply(send, 202) if answer is None else await reply(send, 200, orjson.dumps(answer))

    return app


class HarnessMCPBridge:
    """Serves a ``ToolSource``'s tools over MCP on loopback (see the module doc).

    ``renames`` maps served names to the source's (``resolve_tool_conflicts``' work);
    ``loop``: the event loop an ``async`` source's calls run on (default: the bridge's).
    ``start()`` returns the URL (idempotent); ``stop()`` ends it (idempotent).
    """

    def __init__(
        self,
        source: ToolSource,
        host: str = "127.0.0.1",
        *,
        renames: dict[str, str] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._rpc = _Rpc(source, dict(renames or {}), loop)
        self._host = host
        self._url: str | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str | None:
        """``http://127.0.0.1:PORT/mcp`` while it runs, else None."""
        return self._url

    @property
    def trace(self) -> list[ToolTraceEntry]:
        """Every tool call served, in order (under the source's tool names)."""
        return list(self._rpc.trace)

    def start(self, timeout_s: float = 10.0) -> str:
        """Serve, and return the URL once it answers.

        Raises:
            HarnessError: it did not start within ``timeout_s``.
        """
        if self._url is not None:
            return self._url
        import uvicorn

        from .._keepalive import SERVER_KEEP_ALIVE_S
        from .._uvicorn_server import PromptServer

        # proto named: asyncio sets TCP_NODELAY only on proto TCP sockets (see capture._server)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind((self._host, 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            _app(self._rpc), log_level="warning", lifespan="off", timeout_keep_alive=SERVER_KEEP_ALIVE_S
        )
        server = self._server = PromptServer(config)
        failed: list[BaseException] = []

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # reported by start()
                failed.append(exc)
            finally:
                sock.close()

        self._thread = threading.Thread(target=serve, name="openenv-tool-bridge", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not server.started:
            if failed or not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise HarnessError(
                    f"the MCP tool bridge did not start: {failed[0] if failed else 'timed out'}"
                )
            time.sleep(0.005)
        self._url = f"http://{self._host}:{port}/mcp"
        return self._url

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop serving (calls in flight get ``timeout_s``)."""
        server, thread = self._server, self._thread
        if server is not None:
            server.config.timeout_graceful_shutdown = timeout_s / 2
            server.stop_soon()
        if thread is not None:
            thread.join(timeout_s)
            if thread.is_alive():
                server.force_exit = True
                thread.join(timeout_s)
        self._url, self._server, self._thread = None, None, None
