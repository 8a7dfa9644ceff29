"""Action models as MCP tools, observations as tool results (no server)."""

from __future__ import annotations

import base64
from typing import Annotated, ClassVar, Literal

import pytest
from echo_env import EchoAction, EchoObservation
from pydantic import Field, RootModel

from openenv import Action, Observation
from openenv._exceptions import ValidationFailed
from openenv.mcp._tools import ActionTools, UnknownTool, error_result, observation_result

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


class RunAction(Action):
    """Run a shell command.

    Second paragraph: not part of the description."""

    type: Literal["run"] = "run"
    command: str
    timeout_s: float = 30.0


class KeysAction(Action):
    """Send keys."""

    type: Literal["send_keys"] = "send_keys"
    keys: str
    mcp_tool_name: ClassVar[str] = "type_keys"
    mcp_tool_description: ClassVar[str] = "Type into the terminal."


class TerminalAction(RootModel[Annotated[RunAction | KeysAction, Field(discriminator="type")]]):
    pass


def test_plain_action_is_one_tool_named_after_the_class():
    tools = ActionTools(EchoAction, default_name="step")
    (spec,) = tools.specs.values()
    assert spec.name == "echo"
    assert spec.description == "Send a message; the env echoes it back."
    assert spec.input_schema["required"] == ["message"]
    assert "metadata" not in spec.input_schema["properties"]  # the agent never fills it in
    action = tools.build("echo", {"message": "hi"})
    assert isinstance(action, EchoAction)
    assert action.message == "hi"


def test_bad_arguments_and_unknown_tools_are_typed_errors():
    tools = ActionTools(EchoAction, default_name="step")
    with pytest.raises(ValidationFailed, match="message: Field required"):
        tools.build("echo", {})
    with pytest.raises(ValidationFailed, match="Extra inputs"):
        tools.build("echo", {"message": "x", "nope": 1})
    with pytest.raises(UnknownTool, match="tools: echo"):
        tools.build("reset", {})


@pytest.mark.parametrize(
    "model", [TerminalAction, Annotated[RunAction | KeysAction, Field(discriminator="type")]]
)
def test_tagged_union_gives_one_tool_per_member(model):
    tools = ActionTools(model, default_name="step")
    assert list(tools.specs) == ["run", "type_keys"]
    run, keys = tools.specs["run"], tools.specs["type_keys"]
    assert run.description == "Run a shell command."
    assert keys.description == "Type into the terminal."
    assert set(run.input_schema["properties"]) == {"command", "timeout_s"}  # no tag, no metadata
    assert run.input_schema["required"] == ["command"]
    built = tools.build("type_keys", {"keys": "ls\n"})
    inner = built.root if isinstance(built, RootModel) else built
    assert isinstance(inner, KeysAction)
    assert inner.keys == "ls\n"
    with pytest.raises(ValidationFailed):
        tools.build("run", {"keys": "x"})


def test_observation_result_has_structured_content_and_json_text():
    obs = EchoObservation(echoed_message="hi", message_length=2, reward=0.2)
    result = observation_result(obs, {"session_id": "s1"})
    assert result.is_error is False
    assert result.structured_content == {
        "done": False,
        "truncated": False,
        "reward": 0.2,
        "metadata": {},
        "echoed_message": "hi",
        "message_length": 2,
        "session_id": "s1",
    }
    (text,) = result.content
    assert text.type == "text"
    assert '"echoed_message":"hi"' in text.text


class ScreenObservation(Observation):
    screenshot: bytes = b""
    raw: bytes = b""


def test_image_bytes_become_image_content_other_bytes_stay_base64():
    result = observation_result(ScreenObservation(screenshot=PNG, raw=b"\x01\x02"))
    text, image = result.content
    assert image.type == "image"
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG
    assert result.structured_content is not None
    assert result.structured_content["screenshot"] == "<image/png image: content[1]>"
    assert result.structured_content["raw"] == base64.b64encode(b"\x01\x02").decode()
    assert "screenshot" in text.text


def test_error_result():
    result = error_result("boom")
    assert result.is_error is True
    assert result.content[0].text == "boom"
