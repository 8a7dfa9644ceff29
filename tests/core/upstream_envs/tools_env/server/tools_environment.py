from typing import Any
from uuid import uuid4

from fastmcp import FastMCP

from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.types import Action, Observation, State


class ToolsEnvironment(MCPEnvironment):
    """Two FastMCP tools: ``add`` and ``shout``; each call counts as a step."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("tools_env")
        self._state = State(episode_id=str(uuid4()), step_count=0)

        @mcp.tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            self._state.step_count += 1
            return a + b

        @mcp.tool
        def shout(text: str) -> str:
            """Upper-case a text."""
            self._state.step_count += 1
            return text.upper()

        super().__init__(mcp)

    def reset(self, seed: Any = None, episode_id: Any = None, **kwargs: Any) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(self, action: Action, timeout_s: Any = None, **kwargs: Any) -> Observation:
        return Observation(
            done=False, reward=0.0, metadata={"error": f"unknown action {type(action).__name__}"}
        )

    @property
    def state(self) -> State:
        return self._state
