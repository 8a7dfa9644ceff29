"""A model reply that does not parse is recorded on its turn and scored by the env's
rules: the openai policy (official SDK) against a scripted chat server, a TEST DOUBLE
that answers each turn from a script, on real env servers.

* a tool env (no text field): a reply without a call, a call whose arguments are not
  JSON, a call the env refuses as invalid: each a no-op turn (no reward, the model told
  why), then a valid call scores; a run that never calls ends truncated at 0, not error;
* the echo env (a text env) with tools offered: the raw text of a reply without a valid
  call is the action, and the env scores it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the eval extra brings the openai SDK")

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from openenv import Action, Environment, Execution, Observation, State
from openenv.eval import EvalConfig, Trajectory, load_trajectories, run_eval
from openenv.server import create_app, serve_in_background

ROOT = Path(__file__).resolve().parents[2]
ECHO = str(ROOT / "envs" / "echo_env")
pytestmark = pytest.mark.timeout(120)


class AddAction(Action):
    a: int
    b: int


class AddObservation(Observation):
    target: int = 0


class AddEnv(Environment[AddAction, AddObservation, State]):
    """A tool env: the action is two integers (no text field); reward 1.0 when they
    add up to the target 5, else 0.0; one valid step ends the episode."""

    execution = Execution.INLINE

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> AddObservation:
        self._state = State(episode_id=episode_id)
        return AddObservation(target=5)

    def step(self, action: AddAction) -> AddObservation:
        self._state.step_count += 1
        return AddObservation(target=5, reward=1.0 if action.a + action.b == 5 else 0.0, done=True)

    def state(self) -> State:
        return self._state


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": name, "arguments": arguments}]}


class ScriptedChat:
    """TEST DOUBLE of an OpenAI-compatible server: the reply to a request with n
    assistant messages is ``script[n]`` (the last one once the script runs out)."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        n = sum(m["role"] == "assistant" for m in body["messages"])
        step = self.script[min(n, len(self.script) - 1)]
        message: dict[str, Any] = {"role": "assistant", "content": step["content"]}
        if step.get("tool_calls"):
            message["tool_calls"] = [
                {"id": f"call_{n}_{i}", "type": "function", "function": c}
                for i, c in enumerate(step["tool_calls"])
            ]
        usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
        choice = {
            "index": 0,
            "message": message,
            "finish_reason": "tool_calls" if step.get("tool_calls") else "stop",
        }
        return JSONResponse(
            {"id": f"c{len(self.requests)}", "object": "chat.completion", "created": 0,
             "model": body["model"], "choices": [choice], "usage": usage}
        )  # fmt: skip


def _run(
    env: str, script: list[dict[str, Any]], out: Path, max_turns: int, tools: bool = False
) -> tuple[dict[str, Any], Trajectory, list[dict[str, Any]]]:
    chat = ScriptedChat(script)
    with serve_in_background(chat.app) as served:
        policy = f"openai:scripted?base_url={served.url}/v1&api_key_env=H30_NO_KEY" + (
            "&tools=1" if tools else ""
        )
        results = run_eval(
            EvalConfig(env=env, policy=policy, out=out, count=1, max_turns=max_turns, retries=0)
        )
    [trajectory] = load_trajectories(out)
    return results, trajectory, chat.requests


@pytest.fixture(scope="module")
def add_env() -> Iterator[str]:
    with serve_in_background(create_app(AddEnv)) as server:
        yield server.url


def test_a_tool_env_takes_each_reply_that_does_not_parse_as_a_no_op(add_env: str, tmp_path: Path) -> None:
    script = [
        {"content": "The answer is 5."},  # no tool call
        _call("add_action", '{"a": 2, "b": '),  # arguments that are not JSON
        _call("add_action", '{"a": "two", "b": 3}'),  # JSON that the action schema refuses
        _call("add_action", '{"a": 2, "b": 3}'),  # a valid call
    ]
    results, t, requests = _run(add_env, script, tmp_path, max_turns=6)
    assert t.status == "done"
    assert t.reward == 1.0
    assert len(t.turns) == 4
    first, second, third, fourth = t.turns
    assert first.parse_error == {"reason": "the reply has no tool call", "reply": "The answer is 5."}
    assert "not JSON" in second.parse_error["reason"]
    assert second.parse_error["call"] == {"name": "add_action", "arguments": '{"a": 2, "b": '}
    assert third.parse_error["reason"].startswith("the env refused the action: ")
    assert "a: " in third.parse_error["reason"]  # the env's own words name the field
    assert third.parse_error["action"] == {"a": "two", "b": 3}
    assert fourth.parse_error is None
    assert fourth.action == {"a": 2, "b": 3}
    assert fourth.reward == 1.0
    for turn in (first, second, third):
        assert turn.action is None or turn.action == {"a": "two", "b": 3}
        assert turn.reward is None
        assert not turn.terminated
        assert turn.observation == first.observation  # a no-op: the same observation again
    assert t.parse_failures == 3
    assert results["parse_failures"] == 3
    assert results["episodes_with_parse_failures"] == 1
    assert results["errors"] == 0
    assert results["mean_reward"] == 1.0
    assert results["per_task"][0]["parse_failures"] == 3
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["parse_failures"] == 3
    # the model was told why after each no-op turn, in the message answering its call
    told = [r["messages"][-1] for r in requests[1:]]
    assert [m["role"] for m in told] == ["user", "tool", "tool"]
    assert all(m["content"].startswith("Your last reply was not a valid action (") for m in told)
    assert "the reply has no tool call" in told[0]["content"]


def test_a_tool_env_that_never_gets_a_call_ends_truncated_not_in_error(add_env: str, tmp_path: Path) -> None:
    results, t, _ = _run(add_env, [{"content": "I will not call a tool."}], tmp_path, max_turns=3)
    assert t.status == "truncated"
    assert t.reward == 0.0
    assert t.error is None
    assert [turn.parse_error["reason"] for turn in t.turns] == ["the reply has no tool call"] * 3
    assert results["errors"] == 0
    assert results["parse_failures"] == 3
    assert results["mean_reward"] == 0.0


def test_a_text_env_scores_the_raw_text_of_a_reply_that_does_not_parse(tmp_path: Path) -> None:
    script: list[dict[str, Any]] = [
        {"content": "hello"},  # no call: the text is the message
        {"content": "abc", "tool_calls": [{"name": "echo_action", "arguments": "{bad"}]},
        _call("echo_action", '{"message": "xy"}'),
    ]
    results, t, _ = _run(ECHO, script, tmp_path, max_turns=3, tools=True)
    first, second, third = t.turns
    assert first.parse_error == {"reason": "the reply has no tool call", "reply": "hello"}
    assert first.action == {"message": "hello"}
    assert first.reward == pytest.approx(0.5)
    assert "not JSON" in second.parse_error["reason"]
    assert second.parse_error["reply"] == "abc"
    assert second.action == {"message": "abc"}
    assert second.reward == pytest.approx(0.3)
    assert third.parse_error is None
    assert third.reward == pytest.approx(0.2)
    assert t.status == "truncated"
    assert t.reward == pytest.approx(1.0)
    assert results["parse_failures"] == 2
    assert results["errors"] == 0
