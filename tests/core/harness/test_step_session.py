"""``StepEnvSessionAdapter``: a reset/step/state client as one rollout's tool session."""

from __future__ import annotations

from typing import Any

import pytest

from openenv import SessionClosed
from openenv.core.env_server.mcp_types import Tool
from openenv.core.harness import ResourceSession, StepEnvSessionAdapter, ToolResult, VerifyResult
from tests._envs import TAction

from .._upstream_style import TEnv
from ._game import GUESS, GameClient, Guess, game_session


def test_reset_on_creation_with_seed_episode_id_and_reset_kwargs() -> None:
    client = GameClient()
    session = game_session(client, seed=7, episode_id="ep-1", reset_kwargs={"task_name": "t", "seed": 1})
    assert isinstance(session, ResourceSession)
    assert client.resets == [{"task_name": "t", "seed": 1, "episode_id": "ep-1"}]  # reset_kwargs win
    assert session.initial_messages() == [{"role": "user", "content": "Task None: guess, between 0 and 9"}]
    assert session.list_tools() == [GUESS]


def test_a_tool_call_is_one_step_with_the_built_action() -> None:
    client = GameClient(secret=5)
    session = game_session(client)
    miss = session.call_tool("guess", {"n": 2})
    hit = session.call_tool("guess", {"n": 5})
    assert client.steps == [Guess(2), Guess(5)]
    assert (miss.done, miss.metadata["reward"], miss.data["observation"]) == (False, 0.0, {"hint": "higher"})
    assert miss.data["arguments"] == {"n": 2}
    assert (hit.done, hit.metadata["reward"], hit.data["reward"]) == (True, 1.0, 1.0)
    assert hit.metadata["state"] == {"step_count": 2, "secret": 5}


def test_default_verify_forwards_the_last_step() -> None:
    session = game_session(GameClient(secret=1))
    before = session.verify([])
    assert (before.env_reward, before.done) == (None, False)
    session.call_tool("guess", {"n": 1})
    after = session.verify([{"role": "assistant", "content": "x"}], final_state={"done": True})
    assert (after.env_reward, after.done, after.metrics) == (1.0, True, {"step_count": 1})
    assert after.artifacts == {"final_state": {"step_count": 1, "secret": 1}, "transcript_length": 1}


def test_builders_given_replace_the_defaults() -> None:
    seen: list[Any] = []

    def tool_result(name: str, args: dict[str, Any], result: Any, state: Any) -> ToolResult:
        return ToolResult(
            data=result.observation["hint"], done=result.done, metadata={"reward": result.reward}
        )

    def verify(transcript: list[Any], final_state: Any, last: Any, state: Any) -> VerifyResult:
        seen.append((final_state, last.reward, state.step_count))
        return VerifyResult(env_reward=last.reward, done=True)

    session = game_session(GameClient(), tool_result_builder=tool_result, verify_builder=verify)
    assert session.call_tool("guess", {"n": 9}).data == "lower"
    assert session.verify([], final_state="end").done is True
    assert seen == [("end", 0.0, 1)]


def test_reserved_and_unknown_tools() -> None:
    reserved = Tool(name="reset", description="", input_schema={"type": "object"})
    with pytest.raises(ValueError, match="reserved"):
        game_session(GameClient(), tool_specs=[GUESS, reserved])
    session = game_session(GameClient())
    with pytest.raises(KeyError, match="Reserved"):
        session.call_tool("step", {})
    with pytest.raises(KeyError, match="Unknown tool"):
        session.call_tool("shout", {})


def test_close_is_idempotent_and_ends_the_session() -> None:
    client = GameClient()
    session = game_session(client)
    session.close()
    session.close()
    assert client.closed == 1
    with pytest.raises(SessionClosed):
        session.call_tool("guess", {"n": 1})


def test_a_failed_reset_closes_the_client() -> None:
    client = GameClient(fail_reset=True)
    with pytest.raises(ConnectionError):
        game_session(client)
    assert client.closed == 1


def test_over_a_live_upstream_style_client(server: Any) -> None:
    """An async ``EnvClient`` subclass is used through its ``.sync()`` wrapper."""
    session = StepEnvSessionAdapter(
        TEnv(base_url=server.url),
        seed=4,
        tool_specs=[Tool(name="say", description="Say it.", input_schema={"type": "object"})],
        action_builder=lambda name, args: TAction(message=args["text"], done=args.get("last", False)),
        initial_messages_builder=lambda result, task: [
            {"role": "user", "content": result.observation.message}
        ],
    )
    try:
        assert session.initial_messages() == [{"role": "user", "content": "ready"}]
        first = session.call_tool("say", {"text": "hi"})
        last = session.call_tool("say", {"text": "bye", "last": True})
        verify = session.verify([])
    finally:
        session.close()
    assert first.data["observation"].message == "hi"
    assert (first.done, first.metadata["reward"]) == (False, 1.0)
    assert (last.done, last.metadata["reward"]) == (True, 2.0)
    assert (verify.env_reward, verify.done, verify.metrics["step_count"]) == (2.0, True, 2)
