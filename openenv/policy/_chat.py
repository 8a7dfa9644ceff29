"""What the chat policies share: the system prompt, parsing a model's text into a
tool call, and telling transient model-server errors from fatal ones."""

from __future__ import annotations

import json
import re
from typing import Any

from ._space import ActionSpace

SYSTEM = (
    "You are an agent acting in an environment. Each user message is what the environment "
    "shows you. {how} Keep going until the task is done."
)
_HOW_TEXT = "Answer with the text to send as your action ({field}), nothing else."
_HOW_TOOLS = "Act by calling exactly one of the tools each turn."

#: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` in a model's text.
_TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)

#: Exception class names of the official SDKs that are worth a retry.
_TRANSIENT_NAMES = frozenset(
    {"APIConnectionError", "APITimeoutError", "RateLimitError", "InternalServerError", "OverloadedError"}
)


def system_prompt(actions: ActionSpace, *, tools: bool = False) -> str:
    """The system message: act by text on a text env (unless ``tools``), else by tools."""
    if actions.text_field is not None and not tools:
        return SYSTEM.format(how=_HOW_TEXT.format(field=actions.text_field))
    return SYSTEM.format(how=_HOW_TOOLS)


def tools_text(tools: list[dict[str, Any]]) -> str:
    """The tools (OpenAI shape) as text, with how to call one, for a model whose chat
    template does not show tools (or that has none): the form ``parse_tool_calls`` reads."""
    lines = ['Call a tool by writing <tool_call>{"name": NAME, "arguments": {...}}</tool_call>. The tools:']
    for tool in tools:
        fn = tool.get("function", tool)
        lines.append(json.dumps({k: fn[k] for k in ("name", "description", "parameters") if fn.get(k)}))
    return "\n".join(lines)


def parse_tool_calls(text: str) -> list[dict[str, Any]]:
    """Tool calls written as ``<tool_call>{"name", "arguments"}</tool_call>`` in ``text``
    (how a local model without a tool parser says them); bad JSON is skipped."""
    calls = []
    for match in _TOOL_CALL.finditer(text):
        try:
            call = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            args = call.get("arguments", call.get("parameters", {}))
            calls.append({"name": call["name"], "arguments": args if isinstance(args, dict) else {}})
    return calls


def is_transient(exc: BaseException) -> bool:
    """Whether a model server's error is worth a retry (connection, timeout, 429, 5xx)."""
    if type(exc).__name__ in _TRANSIENT_NAMES:
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)
