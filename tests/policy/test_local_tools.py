"""A local checkpoint on a tool env (no RFC 0002 text field) is told the tools in its
first prompt: by its chat template where the template shows tools, else as text with
how to call one (``<tool_call>{...}</tool_call>``, what the policy parses). A text env's
prompt is the observation alone, as the trainer renders it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="a local checkpoint needs the train extra (torch)")
pytest.importorskip("transformers", reason="a Hugging Face checkpoint needs transformers")

from openenv.policy import ActionSpace, Episode, LocalPolicy

from ._models import tool_caller

TOOL_ENV = {
    "action": {
        "title": "Run",
        "type": "object",
        "properties": {"code": {"type": "string"}, "submit": {"type": "boolean"}},
    },
    "observation": {"properties": {"output": {"type": "string"}}},
}
TEXT_ENV = {
    "action": {
        "title": "AnswerAction",
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    },
    "observation": {"properties": {"prompt": {"type": "string"}}},
}
#: A chat template that shows tools, as instruct models' templates do.
TOOLS_TEMPLATE = (
    "{% if tools %}{{ '<|system|>tools: ' }}{% for t in tools %}{{ t['function']['name'] + ' ' }}{% endfor %}"
    "{% endif %}{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] }}"
    "{% if m['role'] == 'assistant' %}{{ eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def _first_turn(policy: LocalPolicy, schema: dict) -> tuple[str, str]:
    """(the first user message as recorded, the prompt's text as the model read it)."""
    actions = ActionSpace.from_schema(schema)
    agent = policy.agent(Episode("env", "t", {}, 0, 0, actions, 1))
    decision = asyncio.run(agent.act({"prompt": "Write f."}, None))
    assert decision.token_ids
    context = agent.context[: len(agent.context) - len(decision.token_ids)]
    tok = getattr(policy.model.renderer, "tok", None)
    shown = tok.decode(context) if tok is not None else policy.model.decode(context)
    return decision.messages[0]["content"], shown


@pytest.fixture(scope="module")
def hf_folder() -> Path:
    return tool_caller()  # a Hugging Face folder with a chat template; trained once a run, shared


def test_without_a_chat_template_the_tools_are_text_before_the_observation() -> None:
    message, shown = _first_turn(LocalPolicy("tiny", max_tokens=2), TOOL_ENV)
    assert message.endswith("\n\nWrite f.")
    assert "Act by calling exactly one of the tools" in message
    assert '<tool_call>{"name": NAME, "arguments": {...}}</tool_call>' in message
    assert '"name": "run"' in message
    assert '"submit"' in message
    assert "the tools:name: run, " in shown  # tiny's alphabet: lower case, no < { "


def test_a_text_env_prompt_is_the_observation_alone() -> None:
    message, _ = _first_turn(LocalPolicy("tiny", max_tokens=2), TEXT_ENV)
    assert message == "Write f."


def test_a_template_that_ignores_tools_gets_them_as_text(hf_folder: Path) -> None:
    policy = LocalPolicy(str(hf_folder), max_tokens=2)
    assert not policy.model.shows_tools([{"type": "function", "function": {"name": "x"}}])
    message, shown = _first_turn(policy, TOOL_ENV)
    assert '"name": "run"' in message
    assert '{"name": "run", ' in shown


def test_a_template_that_shows_tools_is_given_them(hf_folder: Path) -> None:
    policy = LocalPolicy(str(hf_folder), max_tokens=2)
    policy.model.renderer.tok.chat_template = TOOLS_TEMPLATE
    message, shown = _first_turn(policy, TOOL_ENV)
    assert message == "Write f."  # the template, not the message, carries the tools
    assert "tools: run " in shown
    assert "Act by calling exactly one of the tools" in shown  # the system prompt
    assert shown.endswith("<|user|>Write f.<|assistant|>")
