"""``McpToolEnvironment``: an env of upstream's shape whose tools live on a FastMCP server
(upstream's ``MCPEnvironment``).

``step`` answers ``ListToolsAction`` and ``CallToolAction`` from the server's tools
(through FastMCP's in-memory client) and hands every other action to ``_step_impl``.
Tools may be registered for one mode only (``@env.tool(mode="simulation")``); the
env's ``_mode`` attribute picks which are visible. Tool failures come back in the
observation's ``error`` field, never as exceptions, so one bad call ends nothing.

FastMCP is the env's own dependency (upstream's MCP envs list it); importing this
module does not need it, building one of these envs does. A subclass names the tool
models it answers with (``tool_model``, ``list_tools_observation``) and the tool
names it refuses (``reserved_tool_names``): ``openenv.core`` gives upstream's. The
server plugs in ``protocol_endpoints``: the env's own tools at ``/mcp``
(``_tool_endpoint``).
"""

from __future__ import annotations

import abc
import asyncio
import inspect
from collections import defaultdict
from collections.abc import Callable
from typing import Any, ClassVar

from .._aio import run_sync
from ..server._upstream_env import Environment
from ..server._upstream_models import (
    Action,
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    Observation,
    ToolError,
    ToolErrorType,
)
from ._tool_endpoint import upstream_mcp_endpoint

__all__ = ["MCP_TOOL_CALL_TIMEOUT", "VALID_MODES", "McpToolEnvironment", "get_server_tools"]

#: Seconds a tool call may take when the step gives no ``timeout_s``.
MCP_TOOL_CALL_TIMEOUT = 30.0
VALID_MODES = frozenset({"production", "simulation"})
_JSON_TYPES = {
    int: "integer",
    float: "number",
    bool: "boolean",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
}


def get_server_tools(mcp_server: Any) -> dict[str, Any]:
    """``{name: tool}`` of a FastMCP server (2.x ``get_tools`` or 3.x ``list_tools``)."""
    if hasattr(mcp_server, "get_tools"):
        found = run_sync(mcp_server.get_tools(), in_thread=True)
        if isinstance(found, dict):
            return found
    if hasattr(mcp_server, "list_tools"):
        return {t.name: t for t in run_sync(mcp_server.list_tools(), in_thread=True)}
    return {}


def _refuse_reserved(names: Any, reserved: frozenset[str]) -> None:
    clash = sorted(set(names) & reserved)
    if clash:
        raise ValueError(f"MCP tools cannot use reserved names: {clash} (reserved: {sorted(reserved)})")


def _schema_of(func: Callable[..., Any]) -> dict[str, Any]:
    """A JSON schema of ``func``'s parameters (int, float, bool; anything else a string)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(func).parameters.items():
        properties[name] = {"type": _JSON_TYPES.get(param.annotation, "string")}
        if param.default is inspect.Parameter.empty:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


def _error_type(message: str) -> ToolErrorType:
    low = message.lower()
    if "not found" in low or "unknown tool" in low:
        return ToolErrorType.TOOL_NOT_FOUND
    if "invalid" in low or "argument" in low:
        return ToolErrorType.INVALID_ARGS
    return ToolErrorType.EXECUTION_ERROR


def _failed(tool_name: str, kind: ToolErrorType, message: str) -> CallToolObservation:
    return CallToolObservation(
        tool_name=tool_name, result=None, error=ToolError(error_type=kind, message=message)
    )


class McpToolEnvironment(Environment[Any, Any, Any]):
    """Base of envs that expose FastMCP tools through ``step``; subclasses write
    ``reset``, ``state`` and ``_step_impl`` (every action that is not a tool action)."""

    #: The server plugs these in: the env's own tools at ``/mcp``, our bridge for the rest.
    protocol_endpoints = (upstream_mcp_endpoint,)
    #: What a subclass names: one tool as listed, the ``list_tools`` observation, the
    #: names no tool may take.
    tool_model: ClassVar[type[Any]]
    list_tools_observation: ClassVar[type[Any]]
    reserved_tool_names: ClassVar[frozenset[str]]

    def __init__(self, mcp_server: Any, transform: Any = None) -> None:
        try:
            from fastmcp import Client
        except ModuleNotFoundError as exc:
            raise ModuleNotFoundError(
                "MCPEnvironment needs fastmcp: pip install 'fastmcp>=3'", name=exc.name
            ) from None
        super().__init__(transform=transform)
        _refuse_reserved(get_server_tools(mcp_server), self.reserved_tool_names)
        self.mcp_server: Any = mcp_server
        self.mcp_client: Any = Client(mcp_server)
        # tool name -> {mode or None: function}, and the schema published for each
        self._mode_tools: defaultdict[str, dict[str | None, Callable[..., Any]]] = defaultdict(dict)
        self._mode_tool_schemas: defaultdict[str, dict[str | None, dict[str, Any]]] = defaultdict(dict)

    # -- registration ---------------------------------------------------------------
    def tool(self, mode: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a tool for every mode (``mode=None``: on the FastMCP server) or
        for ``"production"`` / ``"simulation"`` only."""
        if mode is not None and mode not in VALID_MODES:
            raise ValueError(f"Invalid mode {mode!r}: use 'production', 'simulation' or None")

        def register(func: Callable[..., Any]) -> Callable[..., Any]:
            _refuse_reserved([func.__name__], self.reserved_tool_names)
            self._mode_tools[func.__name__][mode] = func
            if mode is None:
                return self._server().tool()(func)  # type: ignore[no-any-return]
            self._mode_tool_schemas[func.__name__][mode] = {
                "name": func.__name__,
                "description": func.__doc__ or "",
                "input_schema": _schema_of(func),
            }
            return func

        return register

    def _server(self) -> Any:
        if self.mcp_server is None:
            raise RuntimeError("MCP server is not available; environment is closed")
        return self.mcp_server

    def _mode_function(self, name: str) -> Callable[..., Any] | None:
        funcs = self._mode_tools.get(name, {})
        return funcs.get(None) or funcs.get(getattr(self, "_mode", None))

    @property
    def supports_code_mode(self) -> bool:
        return True

    def get_callables(self) -> dict[str, Callable[..., Any]]:
        """The tools as plain functions (those of the current mode), for code mode."""
        found = {
            name: t.fn
            for name, t in get_server_tools(self._server()).items()
            if callable(getattr(t, "fn", None))
        }
        for name in self._mode_tools:
            func = self._mode_function(name)
            if func is not None and (name not in found or None not in self._mode_tools[name]):
                found[name] = func
        return found

    def execute_code(self, code: str) -> Observation:
        """Run ``code`` with the tools as functions; its ``result`` variable comes back in
        ``metadata["result"]``, an exception's text in ``metadata["error"]``."""
        scope: dict[str, Any] = {}
        try:
            exec(code, self.get_callables(), scope)
        except SyntaxError as exc:
            return Observation(done=False, reward=0.0, metadata={"error": f"Syntax error: {exc}"})
        except Exception as exc:
            return Observation(done=False, reward=0.0, metadata={"error": str(exc)})
        return Observation(done=False, reward=0.0, metadata={"result": scope.get("result")})

    # -- stepping -------------------------------------------------------------------
    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        if isinstance(action, (ListToolsAction, CallToolAction)):
            return run_sync(self._tool_step(action, timeout_s), in_thread=True)
        return self._step_impl(action, timeout_s=timeout_s, **kwargs)

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        if isinstance(action, (ListToolsAction, CallToolAction)):
            return await self._tool_step(action, timeout_s)
        return await asyncio.to_thread(lambda: self._step_impl(action, timeout_s=timeout_s, **kwargs))

    async def _tool_step(
        self, action: ListToolsAction | CallToolAction, timeout_s: float | None
    ) -> Observation:
        if isinstance(action, ListToolsAction):
            return await self._list_tools()
        return await self._call_tool(action, MCP_TOOL_CALL_TIMEOUT if timeout_s is None else timeout_s)

    async def _list_tools(self) -> Observation:
        try:
            async with self._session() as client:
                listed = await client.list_tools()
        except Exception as exc:
            failed: Observation = self.list_tools_observation(
                tools=[], metadata={"error": str(exc), "error_type": "list_tools_failed"}
            )
            return failed
        mode = getattr(self, "_mode", None)
        tools = [
            self.tool_model(
                name=t.name,
                description=t.description or "",
                input_schema=getattr(t, "inputSchema", None) or {},
            )
            for t in listed
            if t.name not in self._mode_tool_schemas
        ]
        for schemas in self._mode_tool_schemas.values():
            schema = schemas.get(None) or schemas.get(mode)
            if schema is not None:
                tools.append(self.tool_model(**schema))
        listing: Observation = self.list_tools_observation(tools=tools)
        return listing

    async def _call_tool(self, action: CallToolAction, limit_s: float) -> CallToolObservation:
        name = action.tool_name
        if name in self._mode_tool_schemas:  # a mode-specific tool: called directly
            return await self._call_mode_tool(action)
        try:
            async with self._session() as client:
                result = await asyncio.wait_for(client.call_tool(name, action.arguments), timeout=limit_s)
        except TimeoutError:
            return _failed(name, ToolErrorType.TIMEOUT, f"Tool '{name}' timed out after {limit_s} seconds")
        except Exception as exc:
            return _failed(name, _error_type(str(exc)), str(exc))
        return CallToolObservation(tool_name=name, result=result)

    async def _call_mode_tool(self, action: CallToolAction) -> CallToolObservation:
        name = action.tool_name
        func = self._mode_function(name)
        if func is None:
            mode = getattr(self, "_mode", None)
            return _failed(name, ToolErrorType.TOOL_NOT_FOUND, f"Tool '{name}' not available in {mode} mode")
        try:
            value = func(**action.arguments)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return _failed(name, ToolErrorType.EXECUTION_ERROR, str(exc))
        from fastmcp.client.client import CallToolResult
        from mcp.types import TextContent

        result = CallToolResult(
            content=[TextContent(type="text", text=str(value))],
            structured_content={"result": value},
            meta=None,
            data=value,
            is_error=False,
        )
        return CallToolObservation(tool_name=name, result=result)

    def _session(self) -> Any:
        """The FastMCP client as an async context (re-entrant; one transport)."""
        if self.mcp_client is None:
            raise RuntimeError("MCP client is not available; environment is closed")
        return self.mcp_client

    def mcp_session(self) -> Any:
        """``async with env.mcp_session() as client``: the env's FastMCP client."""
        return self._session()

    @abc.abstractmethod
    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        """Every action that is not ``ListToolsAction`` / ``CallToolAction``."""

    def close(self) -> None:
        self.mcp_client = None
        self.mcp_server = None
