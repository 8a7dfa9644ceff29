"""Responses tools as chat tools, and the backend's calls of them back as Responses items.

A chat backend knows one tool form, the function. The Responses API has more, and
agents use them:

- ``function``: passed as it is.
- ``namespace`` (Codex CLI offers each MCP server's tools as one,
  ``{"type": "namespace", "name": "mcp__env", "tools": [...]}``): each tool inside is a
  chat function named ``NAMESPACE__NAME`` (``mcp__env__say``). The backend's call of that
  name comes back as the item the agent expects: the tool's own name, and its
  ``namespace``.
- ``custom`` (free-form input, such as Codex's ``apply_patch``; a grammar, when it has one,
  is added to the description): a chat function of one string parameter, ``input``. Its
  call comes back as a ``custom_tool_call`` whose ``input`` is that string.
- Hosted tools (``web_search``, ``file_search``, ``code_interpreter``, ``mcp``...) run on
  the API's side, which a chat backend does not have; ``local_shell`` and
  ``computer_use_preview`` have no chat form here: none of these is forwarded.

In the history, ``function_call`` items of a namespace and ``custom_tool_call`` items are
written as the chat tool calls the backend made, so a conversation renders the same
each turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._errors import BadRequest
from ._base import need

_INPUT = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The tool's free-form input."}},
    "required": ["input"],
}


def chat_name(namespace: str | None, name: str) -> str:
    """The chat function name of tool ``name`` in ``namespace`` (none: the name itself)."""
    if not namespace:
        return name
    return f"{namespace}{name}" if namespace.endswith("__") else f"{namespace}__{name}"


def custom_arguments(text: Any) -> str:
    """A custom tool's free-form input as the chat call's JSON arguments."""
    return json.dumps({"input": text if isinstance(text, str) else json.dumps(text)})


def custom_input(arguments: str) -> str:
    """The free-form input of a chat call of a custom tool (its arguments, when they are
    not ``{"input": TEXT}``)."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return arguments
    text = value.get("input") if isinstance(value, dict) else None
    return text if isinstance(text, str) else arguments


@dataclass(frozen=True)
class Target:
    """What a chat function stands for: a tool's own name, its namespace, its kind."""

    name: str
    namespace: str | None = None
    custom: bool = False


def _description(tool: dict[str, Any]) -> str:
    text = str(tool.get("description") or "")
    fmt = tool.get("format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "grammar" and fmt.get("definition"):
        syntax = fmt.get("syntax") or "a"
        text += f"\n\nThe input follows this {syntax} grammar:\n{fmt['definition']}"
    return text.strip()


class ToolMap:
    """The tools of one Responses request: ``chat`` (the chat completions tools) and, per
    chat function name, the ``Target`` it stands for."""

    def __init__(self, tools: Any) -> None:
        self.chat: list[dict[str, Any]] = []
        self.targets: dict[str, Target] = {}
        need(tools is None or isinstance(tools, list), "'tools' must be a list")
        for tool in tools or []:
            need(isinstance(tool, dict), "each tool must be an object")
            if tool.get("type") == "namespace":
                namespace = tool.get("name")
                need(isinstance(namespace, str) and bool(namespace), "a namespace tool needs a 'name'")
                inner = tool.get("tools")
                need(isinstance(inner, list), f"namespace {namespace!r} needs a list of 'tools'")
                for t in inner:
                    need(isinstance(t, dict), f"each tool of namespace {namespace!r} must be an object")
                    self._add(t, namespace)
            else:
                self._add(tool, None)

    def _add(self, tool: dict[str, Any], namespace: str | None) -> None:
        kind = tool.get("type")
        if kind not in ("function", "custom"):
            return  # hosted: nothing a chat backend can run
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest(f"a {kind} tool needs a 'name'")
        flat = chat_name(namespace, name)
        if flat in self.targets:
            return  # the first of a name wins, as a chat backend would see one
        self.targets[flat] = Target(name, namespace, kind == "custom")
        if kind == "custom":
            function = {"name": flat, "description": _description(tool), "parameters": _INPUT}
        else:
            function = {"name": flat, **{k: tool[k] for k in ("description", "parameters") if k in tool}}
        self.chat.append({"type": "function", "function": function})

    def item(self, call_id: str, name: str, arguments: str, *, done: bool = True) -> dict[str, Any]:
        """The Responses output item of the backend's call ``call_id`` of chat function
        ``name`` (in progress, with empty arguments, unless ``done``)."""
        target = self.targets.get(name, Target(name))
        status = "completed" if done else "in_progress"
        item: dict[str, Any]
        if target.custom:
            item = {
                "type": "custom_tool_call",
                "id": f"ctc_{call_id}",
                "call_id": call_id,
                "name": target.name,
                "input": custom_input(arguments) if done else "",
                "status": status,
            }
        else:
            item = {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": target.name,
                "arguments": arguments if done else "",
                "status": status,
            }
        if target.namespace:
            item["namespace"] = target.namespace
        return item
