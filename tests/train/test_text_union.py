"""RFC 0002 on a tagged-union action: the default member's one required string field."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field, RootModel, TypeAdapter
from terminal_env import MODELS, RunAction, TerminalAction, TerminalEnv

from openenv import Action, EnvClient
from openenv.train import NotATextEnv, action_field, text_env
from openenv.train._text import fetch_schema


class Say(Action):
    type: Literal["say"] = "say"
    text: str


class Wait(Action):
    type: Literal["wait"] = "wait"
    seconds: float = 1.0


class NoDefault(RootModel[Annotated[Say | Wait, Field(discriminator="type")]]):
    """Every tag may be left out: a tagless object fits both members."""


def test_the_terminal_env_union_gives_its_run_members_command() -> None:
    schema = MODELS.action.model_json_schema()
    assert "oneOf" in schema  # a union: no top-level properties of its own
    assert action_field(schema) == "command"
    env = text_env({"action": schema, "observation": MODELS.observation.model_json_schema()})
    action = env.make_action("ls -la")
    assert action == {"command": "ls -la"}
    assert TerminalAction.model_validate(action).root == RunAction(command="ls -la")  # no tag: a run


def test_a_union_without_one_default_member_needs_an_adapter() -> None:
    with pytest.raises(NotATextEnv, match="exactly one default member"):
        action_field(NoDefault.model_json_schema())
    with pytest.raises(NotATextEnv, match="exactly one default member"):
        action_field(TypeAdapter(Say | Wait).json_schema())  # a plain anyOf union, tags optional


def test_a_served_terminal_env_is_driven_by_text(serve) -> None:
    server = serve(TerminalEnv)
    env = text_env(fetch_schema(server.url))
    with EnvClient(server.url, MODELS) as client:
        first = client.reset(free_shell=True)
        assert env.observation_text(first.observation.model_dump()).startswith("You are in ")
        result = client.step(env.make_action("echo $((6 * 7))"))
        assert result.observation.output == "42\n"
        assert "42" in env.observation_text(result.observation.model_dump())
