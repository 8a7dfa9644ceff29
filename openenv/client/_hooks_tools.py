"""Hook-based MCP clients: ``ToolsHookClient`` (tool discovery) and ``ToolCallingHookClient``.

They are upstream's ``MCPClientBase`` and ``MCPToolClient`` (``openenv.core`` names
them so and gives them upstream's MCP models through ``_mcp_types``). Two ways to reach
the tools, as upstream:

* production mode (the default): JSON-RPC ``tools/list`` / ``tools/call`` in
  ``{"type": "mcp"}`` frames on the env's own WebSocket (our connection, as every other
  call), so ``reset``/``step`` and tool calls share the socket's env; before the first
  ``reset`` a tool call runs on a throwaway env, as upstream's sessionless ``/mcp``.
  Upstream's server and ours both answer these frames.
* simulation mode (an instance made without ``__init__``, as upstream's tests do, or
  ``use_production_mode = False``): ``ListToolsAction`` / ``CallToolAction`` as ``step``
  actions of an ``MCPEnvironment``.

A failed tool raises ``openenv.ExecutionError`` (upstream: ``RuntimeError``).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from .._exceptions import ExecutionError, OpenEnvError
from .._models import Observation, State
from ._hooks import HookEnvClient
from ._hooks_result import HookStepResult as StepResult

__all__ = ["GenericMCPObservation", "ToolCallingHookClient", "ToolsHookClient"]


class GenericMCPObservation(Observation):
    """An observation of an MCP env that is neither a tool list nor a tool call."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)


class ToolsHookClient(HookEnvClient[Any, Observation, State]):
    """An env client that also lists tools (``list_tools``). Production mode only.

    A subclass gives ``_mcp_types()``: the module with the MCP models (``Tool``,
    ``ListToolsAction``, ``CallToolAction`` and their observations, ``ToolError``).
    """

    def __init__(
        self,
        base_url: str,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 60.0,
        websocket_ping_interval_s: float | None = 20.0,
        websocket_ping_timeout_s: float | None = 20.0,
        provider: Any = None,
        mode: str | None = None,
        max_message_size_mb: float = 100.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        mode = mode or "production"
        if mode.lower() != "production":
            raise ValueError(
                f"MCP clients speak production mode only, not {mode!r}: use GenericEnvClient for simulation"
            )
        super().__init__(
            base_url=base_url,
            connect_timeout_s=connect_timeout_s,
            message_timeout_s=message_timeout_s,
            max_message_size_mb=max_message_size_mb,
            websocket_ping_interval_s=websocket_ping_interval_s,
            websocket_ping_timeout_s=websocket_ping_timeout_s,
            provider=provider,
            mode=mode,
            headers=headers,
        )
        self._tools_cache: list[Any] | None = None
        self.use_production_mode = True
        self._jsonrpc_request_id = 0

    def _mcp_types(self) -> Any:
        raise NotImplementedError("a ToolsHookClient subclass names its MCP models")

    async def _production_mcp_request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """One JSON-RPC request in an ``mcp`` frame; the reply object (``result`` or ``error``)."""
        self._jsonrpc_request_id += 1
        rpc = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": self._jsonrpc_request_id}
        reply = await self._io(lambda c: c._call({"type": "mcp", "data": rpc}))
        data: dict[str, Any] = reply.data
        return data

    # --- tools ---------------------------------------------------------------------

    async def list_tools(self, use_cache: bool = True) -> list[Any]:
        """The env's tools (``Tool``: name, description, input_schema); cached."""
        if use_cache and self._tools_cache is not None:
            return self._tools_cache
        types = self._mcp_types()
        if getattr(self, "use_production_mode", False):
            reply = await self._production_mcp_request("tools/list")
            if "error" in reply:
                raise OpenEnvError(f"tools/list failed: {_error_text(reply)}")
            tools = [_tool(types, t) for t in (reply.get("result") or {}).get("tools", [])]
        else:
            result = await self.step(types.ListToolsAction())
            obs = result.observation
            tools = list(obs.tools) if isinstance(obs, types.ListToolsObservation) else []
        self._tools_cache = tools
        return tools

    def _step_payload(self, action: Any) -> dict[str, Any]:
        types = self._mcp_types()
        if isinstance(action, types.ListToolsAction):
            return {"type": "list_tools"}
        if isinstance(action, types.CallToolAction):
            return {"type": "call_tool", "tool_name": action.tool_name, "arguments": action.arguments}
        if hasattr(action, "model_dump"):
            return dict(action.model_dump())
        return {"action": str(action)}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Observation]:
        types = self._mcp_types()
        obs = payload.get("observation", {})
        signals = {
            "done": payload.get("done", False),
            "reward": payload.get("reward"),
            "metadata": payload.get("metadata", obs.get("metadata", {})),
        }
        observation: Observation
        if "tools" in obs:
            observation = types.ListToolsObservation(tools=[_tool(types, t) for t in obs["tools"]], **signals)
        elif "tool_name" in obs:
            error = types.ToolError(**obs["error"]) if obs.get("error") else None
            observation = types.CallToolObservation(
                tool_name=obs.get("tool_name", ""), result=obs.get("result"), error=error, **signals
            )
        else:
            extra = {k: v for k, v in obs.items() if k not in ("done", "reward", "metadata")}
            observation = GenericMCPObservation(**signals, **extra)
        return StepResult(
            observation=observation,
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(episode_id=payload.get("episode_id"), step_count=payload.get("step_count", 0))

class ToolCallingHookClient(ToolsHookClient):
    """Tool calling: ``list_tools()``, ``call_tool(name, **args)``, ``get_tool``, ``has_tool``.

    >>> async with MCPToolClient(base_url="http://127.0.0.1:8000") as env:  # doctest: +SKIP
    ...     await env.call_tool("echo_message", message="hi")
    """

    async def call_tool(self, name: str, **kwargs: Any) -> Any:
        """Call tool ``name``; returns its result (the structured ``data`` when there is one)."""
        if getattr(self, "use_production_mode", False):
            reply = await self._production_mcp_request("tools/call", {"name": name, "arguments": kwargs})
            if "error" in reply:
                raise ExecutionError(f"Tool '{name}' failed: {_error_text(reply)}")
            result = reply.get("result")
            return result["data"] if isinstance(result, dict) and "data" in result else result
        types = self._mcp_types()
        step = await self.step(types.CallToolAction(tool_name=name, arguments=kwargs))
        obs = step.observation
        if not isinstance(obs, types.CallToolObservation):
            return obs
        if obs.error is not None:
            kind = getattr(obs.error.error_type, "value", obs.error.error_type)
            raise ExecutionError(f"Tool '{name}' failed: {obs.error.message} (type: {kind})")
        result = obs.result
        if hasattr(result, "data"):
            return result.data
        return result["data"] if isinstance(result, dict) and "data" in result else result

    async def get_tool(self, name: str) -> Any:
        """The tool called ``name``, or ``None``."""
        return next((t for t in await self.list_tools() if t.name == name), None)

    async def has_tool(self, name: str) -> bool:
        return await self.get_tool(name) is not None


def _tool(types: Any, payload: Any) -> Any:
    if isinstance(payload, types.Tool):
        return payload
    return types.Tool(
        name=payload.get("name", ""),
        description=payload.get("description", ""),
        input_schema=payload.get("input_schema", payload.get("inputSchema", {})),
    )


def _error_text(reply: dict[str, Any]) -> str:
    error = reply.get("error")
    return str(error.get("message", error)) if isinstance(error, dict) else "no result in the reply"
