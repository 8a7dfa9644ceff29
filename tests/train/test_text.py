"""RFC 0002: which field is the prompt, which is the action."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from openenv import Action, Observation
from openenv.train import NotATextEnv, action_field, observation_text, text_env


class Echo(Action):
    message: str


class Code(Action):
    code: str
    timeout_s: float = 10.0


class TwoStrings(Action):
    a: str
    b: str


class Move(Action):
    x: int


class PromptObs(Observation):
    prompt: str = ""


class ChatObs(Observation):
    messages: list[dict[str, str]] = []


class Other(Observation):
    board: str = ""


def schema(action: type[BaseModel], obs: type[BaseModel]) -> dict[str, object]:
    return {"action": action.model_json_schema(), "observation": obs.model_json_schema()}


def test_the_one_required_string_field_is_the_action() -> None:
    assert action_field(Echo.model_json_schema()) == "message"
    assert action_field(Code.model_json_schema()) == "code"  # optional fields do not count
    env = text_env(schema(Code, PromptObs))
    assert env.action_field == "code"
    assert env.make_action("print(1)") == {"code": "print(1)"}


@pytest.mark.parametrize("action", [TwoStrings, Move])
def test_other_actions_need_an_adapter(action: type[BaseModel]) -> None:
    with pytest.raises(NotATextEnv, match="make_action adapter"):
        text_env(schema(action, PromptObs))
    env = text_env(schema(action, PromptObs), action_adapter=lambda text: {"x": len(text)})
    assert env.make_action("abc") == {"x": 3}


def test_prompt_then_messages() -> None:
    assert observation_text({"prompt": "2+2?", "messages": [{"role": "user", "content": "no"}]}) == "2+2?"
    chat = {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
    assert observation_text(chat) == "be brief\nhi"
    assert text_env(schema(Echo, ChatObs)).observation_text(chat) == "be brief\nhi"


def test_an_observation_without_prompt_needs_an_adapter() -> None:
    with pytest.raises(NotATextEnv, match="observation_text adapter"):
        text_env(schema(Echo, Other))
    with pytest.raises(NotATextEnv):
        observation_text({"board": "x"})
    env = text_env(schema(Echo, Other), observation_adapter=lambda obs: str(obs["board"]))
    assert env.observation_text({"board": "x.o"}) == "x.o"
