"""An external MCP server (a stdio command or a URL) wrapped as an env.

Each env session holds one MCP connection, opened at reset (a fresh server process
per episode for a command) and closed on the next reset and at close. Actions are
tool calls, observations are tool results, the tool list is in the reset
observation's metadata, and the reward comes from an ``openenv.rewards`` rubric or
any function ``reward(action, observation) -> float | None``, sync or async.

The SDK's client runs its transport in task groups that must be left by the task
that entered them, so each connection is held open by a task of its own; calls are
made from the env's own task (they are plain requests on that connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar

import anyio
import mcp_types as mt
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from .._env import AsyncEnvironment
from .._exceptions import ProviderError
from ._models import McpState, ToolCall, ToolResult

log = logging.getLogger("openenv.mcp")

RewardFn = Callable[[ToolCall, ToolResult], "float | Awaitable[float | None] | None"]


class McpConnection:
    """One SDK ``Client`` connection, held open by its own task until ``close``."""

    def __init__(self, target: StdioServerParameters | str, *, mode: str = "auto") -> None:
        self.target = target
        self.mode = mode
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            raise ProviderError("the MCP connection is not open")
        return self._client

    async def open(self, timeout_s: float) -> Client:
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready), name="openenv-mcp-connection")
        try:
            self._client = await asyncio.wait_for(asyncio.shield(ready), timeout_s)
        except TimeoutError:
            await self.close()
            raise ProviderError(f"MCP server {self.describe()} did not answer within {timeout_s} s") from None
        except Exception as exc:
            await self.close()
            raise ProviderError(f"MCP server {self.describe()} failed to start: {exc}") from exc
        return self._client

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        try:
            async with Client(self.target, mode=self.mode) as client:
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ProviderError(repr(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("MCP connection to %s ended: %r", self.describe(), exc)
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def close(self, timeout_s: float = 10.0) -> None:
        """Close the connection; a spawned server gets the SDK's stdin-close, SIGTERM, SIGKILL."""
        self._stop.set()
        self._client = None
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        except BaseException:  # the connection had already failed (logged by _hold)
            pass

    def describe(self) -> str:
        if isinstance(self.target, str):
            return self.target
        return " ".join([self.target.command, *self.target.args])


def _content_json(result: mt.CallToolResult) -> list[dict[str, Any]]:
    return [c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in result.content]


def _text(result: mt.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, mt.TextContent))


class McpServerEnv(AsyncEnvironment[ToolCall, ToolResult, McpState]):
    """An external MCP server as an env: tool calls in, tool results out.

    Args:
        command: the server's command line (stdio), e.g. ``["python", "server.py"]``.
        url: or the server's streamable HTTP URL.
        env: extra environment variables for a command (the SDK passes only
            ``HOME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``, ``LOGNAME`` through).
        cwd: working directory of a command.
        reward: a ``Rubric`` (scored with ``acall``) or ``(action, observation) -> float
            | None``, sync or async.
        done_tools: calling one of these tools ends the episode (terminated).
        max_steps: the episode ends truncated after this many tool calls.
        tool_timeout_s: a call running longer is cancelled; ``is_error``, ``timed_out``.
        connect_timeout_s: limit on starting and handshaking with the server.
        mode: the SDK's protocol negotiation: ``"auto"`` or ``"legacy"``.
    """

    env_name: ClassVar[str | None] = "mcp_server"
    #: Defaults for the constructor's arguments (``mcp_server_env`` sets them).
    config: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, **kwargs: Any) -> None:
        cfg = {**self.config, **kwargs}
        self._target = _target(
            cfg.pop("command", None), cfg.pop("url", None), cfg.pop("env", None), cfg.pop("cwd", None)
        )
        self._reward: RewardFn | None = cfg.pop("reward", None)
        self._done_tools = frozenset(cfg.pop("done_tools", ()))
        self._max_steps: int | None = cfg.pop("max_steps", None)
        self._tool_timeout_s = float(cfg.pop("tool_timeout_s", 30.0))
        self._connect_timeout_s = float(cfg.pop("connect_timeout_s", 30.0))
        self._mode = str(cfg.pop("mode", "auto"))
        if cfg:
            raise TypeError(f"McpServerEnv got unknown arguments: {', '.join(sorted(cfg))}")
        self._conn: McpConnection | None = None
        self._tools: dict[str, mt.Tool] = {}
        self._state = McpState()

    async def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None
    ) -> ToolResult:
        await self._disconnect()
        self._conn = McpConnection(self._target, mode=self._mode)
        client = await self._conn.open(self._connect_timeout_s)
        try:
            with anyio.fail_after(self._connect_timeout_s):
                listed = await client.list_tools()
        except BaseException:
            await self._disconnect()
            raise
        self._tools = {t.name: t for t in listed.tools}
        self._state = McpState(episode_id=episode_id or uuid.uuid4().hex, tools=list(self._tools))
        tools = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools]
        return ToolResult(text="tools: " + ", ".join(self._tools), metadata={"tools": tools})

    async def step(self, action: ToolCall) -> ToolResult:
        if self._conn is None:
            raise ProviderError("reset first: no MCP connection")
        self._state.step_count += 1
        obs = await self._call(self._conn.client, action)
        if self._reward is not None:
            acall = getattr(self._reward, "acall", None)  # an openenv.rewards.Rubric scores on the loop
            value = acall(action, obs) if callable(acall) else self._reward(action, obs)
            obs.reward = await value if inspect.isawaitable(value) else value
        if action.tool in self._done_tools and not obs.is_error:
            obs.done = True
        if self._max_steps is not None and self._state.step_count >= self._max_steps and not obs.done:
            obs.done = obs.truncated = True
        return obs

    async def _call(self, client: Client, action: ToolCall) -> ToolResult:
        if action.tool not in self._tools:
            known = ", ".join(self._tools)
            return ToolResult(
                tool=action.tool, text=f"unknown tool {action.tool!r} (tools: {known})", is_error=True
            )
        try:
            with anyio.fail_after(self._tool_timeout_s):
                result = await client.call_tool(action.tool, action.arguments)
        except TimeoutError:
            text = f"tool {action.tool!r} timed out after {self._tool_timeout_s} s"
            return ToolResult(tool=action.tool, text=text, is_error=True, timed_out=True)
        except MCPError as exc:  # refused by the server: the agent's mistake, not the env's
            return ToolResult(
                tool=action.tool, text=f"error {exc.error.code}: {exc.error.message}", is_error=True
            )
        return ToolResult(
            tool=action.tool,
            text=_text(result),
            content=_content_json(result),
            structured_content=result.structured_content,
            is_error=bool(result.is_error),
        )

    async def state(self) -> McpState:
        return self._state.model_copy()

    async def close(self) -> None:
        await self._disconnect()

    async def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


def _target(
    command: Sequence[str] | str | None, url: str | None, env: Mapping[str, str] | None, cwd: str | None
) -> StdioServerParameters | str:
    if (command is None) == (url is None):
        raise TypeError("McpServerEnv needs exactly one of command= or url=")
    if url is not None:
        return url
    argv = [command] if isinstance(command, str) else list(command or ())
    if not argv:
        raise TypeError("McpServerEnv: command= is empty")
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(env or {}) or None, cwd=cwd)


def mcp_server_env(
    name: str = "mcp_server",
    *,
    command: Sequence[str] | str | None = None,
    url: str | None = None,
    **kwargs: Any,
) -> type[McpServerEnv]:
    """A ``McpServerEnv`` subclass bound to one server, to serve by class
    (``create_app(cls)``, ``openenv serve module:cls``)."""
    config = {"command": command, "url": url, **kwargs}
    config = {k: v for k, v in config.items() if v is not None}
    _target(config.get("command"), config.get("url"), config.get("env"), config.get("cwd"))
    return type(name, (McpServerEnv,), {"config": config, "env_name": name, "__module__": __name__})
