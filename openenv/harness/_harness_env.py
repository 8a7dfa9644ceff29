"""``HarnessEnvironment``: an env whose steps are turns of an external agent (RFC 005).

``reset`` (re)starts the agent through its ``AgenticHarnessAdapter``; each ``step`` with
a ``HarnessAction`` is one conversational turn, answered as an ``Observation`` whose
metadata holds the ``response``, the turn's events and its number (upstream's keys).
A ``rubric`` (``rubric(action, observation) -> reward``, sync or async) scores each
turn. A failed or overlong turn ends the episode with an ``error`` event and
``error_type`` (``turn_timeout``, ``harness_crashed``), as upstream's does.
``tools`` (a ``ToolSource``: a ``ResourceSession``, say; or ``mcp``, a FastMCP server, as
upstream's) are the env's tools offered to the agent: on ``reset`` they are renamed
where they clash with the agent's own (``resolve_tool_conflicts``), served by a
``HarnessMCPBridge`` on loopback and handed to the adapter (``inject_tools(tools,
bridge_url)``) before it starts; each turn's calls of them are in its observation's
``metadata["env_tool_calls"]``. The bridge stops with the episode.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from .._env import AsyncEnvironment
from .._models import Action, Observation, State
from ._agentic import (
    AgenticHarnessAdapter,
    HarnessError,
    HarnessEvent,
    HarnessEventType,
    HarnessNotRunningError,
    HarnessTurnTimeoutError,
    events_to_metadata,
)
from ._tool_bridge import FastMCPTools, HarnessMCPBridge, ToolSource, list_tools, resolve_tool_conflicts

__all__ = ["HarnessAction", "HarnessEnvironment"]

Rubric = Callable[[Any, Observation], "float | Awaitable[float]"]


class HarnessAction(Action):
    """One user message: a conversational turn."""

    message: str


class HarnessEnvironment(AsyncEnvironment[HarnessAction, Observation, State]):
    """An external agent as an env (see the module doc). One adapter per instance: it owns
    one agent; constructing the env starts nothing, ``reset`` does."""

    env_name = "harness"

    def __init__(
        self,
        adapter: AgenticHarnessAdapter,
        mcp: Any = None,
        rubric: Rubric | None = None,
        *,
        tools: ToolSource | None = None,
    ) -> None:
        if tools is not None and mcp is not None:
            raise ValueError("give the env's tools as tools= or as mcp= (a FastMCP server), not both")
        self.adapter, self.rubric = adapter, rubric
        self.tools: ToolSource | None = FastMCPTools(mcp) if mcp is not None else tools
        self.bridge: HarnessMCPBridge | None = None
        self._state = State()
        self._trajectory: list[HarnessEvent] = []
        self._active = False

    @property
    def trajectory(self) -> list[HarnessEvent]:
        """Every event of this episode's turns."""
        return list(self._trajectory)

    async def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None
    ) -> Observation:
        self._active = False
        await self.adapter.stop()
        await self._stop_bridge()
        try:
            injected = await self._inject()
            await self.adapter.start(self.adapter.config.working_directory)
        except BaseException:
            await self.adapter.stop()
            await self._stop_bridge()
            raise
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        self._trajectory, self._active = [], True
        metadata = {"episode_id": self._state.episode_id, "injected_tools": [t.name for t in injected]}
        return Observation(reward=0.0, metadata=metadata)

    async def _inject(self) -> list[Any]:
        """Serve the env's tools (if any) and hand them to the adapter; the tools handed."""
        if self.tools is None:
            await self.adapter.inject_tools([], None)
            return []
        tools = await list_tools(self.tools)
        resolved = resolve_tool_conflicts(tools, self.adapter.BUILTIN_TOOL_NAMES)
        renames = {
            new.name: old.name for new, old in zip(resolved, tools, strict=True) if new.name != old.name
        }
        self.bridge = HarnessMCPBridge(self.tools, renames=renames, loop=asyncio.get_running_loop())
        url = await asyncio.to_thread(self.bridge.start)
        await self.adapter.inject_tools(resolved, url)
        return resolved

    async def _stop_bridge(self) -> None:
        if self.bridge is not None:
            bridge, self.bridge = self.bridge, None
            await asyncio.to_thread(bridge.stop)

    async def step(self, action: HarnessAction) -> Observation:
        if not isinstance(action, HarnessAction):
            raise TypeError(f"HarnessEnvironment takes a HarnessAction, not {type(action).__name__}")
        if not self._active:
            raise HarnessNotRunningError("no active episode: call reset() before step()")
        if not await self.adapter.is_alive():
            return await self._failed("harness process is not running", "harness_crashed")
        timeout = self.adapter.config.session_timeout_s
        calls_before = len(self.bridge.trace) if self.bridge is not None else 0
        try:
            reply = await asyncio.wait_for(self.adapter.send_message(action.message), timeout)
        except (TimeoutError, HarnessTurnTimeoutError) as exc:
            return await self._failed(str(exc) or f"harness turn exceeded {timeout} seconds", "turn_timeout")
        except HarnessError as exc:
            return await self._failed(str(exc), "harness_crashed")
        self._trajectory += reply.events
        self._state.step_count += 1
        obs = Observation(
            done=reply.done,
            reward=0.0,
            metadata={
                "response": reply.response,
                "turn_events": events_to_metadata(reply.events),
                "turn_number": self._state.step_count,
            },
        )
        if self.bridge is not None:
            obs.metadata["env_tool_calls"] = [e.to_plain() for e in self.bridge.trace[calls_before:]]
        if self.rubric is not None:
            score = self.rubric(action, obs)
            obs.reward = await score if inspect.isawaitable(score) else score
        return obs

    async def _failed(self, message: str, error_type: str) -> Observation:
        self._active = False
        await self.adapter.stop()
        await self._stop_bridge()
        event = HarnessEvent(type=HarnessEventType.ERROR, data={"message": message, "recoverable": False})
        self._trajectory.append(event)
        return Observation(
            done=True,
            reward=0.0,
            metadata={"error": message, "error_type": error_type, "turn_events": events_to_metadata([event])},
        )

    async def state(self) -> State:
        return self._state.model_copy()

    async def close(self) -> None:
        self._active = False
        await self.adapter.stop()
        await self._stop_bridge()
