"""What a policy may do in an env, read from the env's ``/schema``: the RFC 0002 text
field and one tool per action (a tagged union gives one tool per member, named by its
tag, as the MCP bridge names them), and how a tool call or a text becomes an action.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import PolicyError

#: Fields every action has that a policy does not fill in.
_HIDDEN = ("metadata",)
#: Observation fields that travel beside it (reward, end) and are not shown to a model.
_SIGNALS = ("done", "truncated", "reward", "metadata")


@dataclass(frozen=True, slots=True)
class Tool:
    """One action as a function a model can call (OpenAI / Anthropic tool shape)."""

    name: str
    description: str
    parameters: dict[str, Any]
    tag_field: str | None = None
    tag_value: Any = None
    via: tuple[str, str] | None = None
    """For a tool of an MCP env: the action's (tool name field, arguments field)."""

    def openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def anthropic(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}


@dataclass(frozen=True)
class ActionSpace:
    """An env's action schema, as text (``text_field``) and as tools."""

    schema: dict[str, Any]
    tools: tuple[Tool, ...] = ()
    text_field: str | None = None
    observation_fields: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any]) -> ActionSpace:
        """From an env's ``/schema`` reply (``{"action": ..., "observation": ...}``)."""
        action = dict(schema.get("action") or {})
        observation = schema.get("observation") or {}
        return cls(
            schema=action,
            tools=tuple(_tools(action)),
            text_field=_text_field(action),
            observation_fields=tuple(observation.get("properties", {})),
        )

    def for_observation(self, observation: Mapping[str, Any]) -> ActionSpace:
        """For an env whose action calls a named MCP tool (``{tool, arguments}``, as
        ``openenv.mcp.McpServerEnv``; ``{tool_name, arguments}`` as upstream's MCP envs):
        the tools its reset observation lists in ``metadata["tools"]``, each its own
        tool. Otherwise this space unchanged."""
        listed = (observation.get("metadata") or {}).get("tools")
        call = _mcp_call(self.schema)
        if call is None or not isinstance(listed, list) or not listed:
            return self
        tag_field, tag_value, via = call
        tools = tuple(
            Tool(
                str(t["name"]),
                str(t.get("description") or ""),
                dict(t.get("inputSchema") or t.get("input_schema") or {"type": "object", "properties": {}}),
                tag_field,
                tag_value,
                via,
            )
            for t in listed
            if isinstance(t, Mapping) and isinstance(t.get("name"), str)
        )
        return ActionSpace(self.schema, tools, None, self.observation_fields)

    def tool(self, name: str) -> Tool:
        for tool in self.tools:
            if tool.name == name:
                return tool
        known = ", ".join(t.name for t in self.tools)
        raise PolicyError(f"the model called tool {name!r}; this env's tools are: {known}")

    def action_from_call(self, name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """The action a tool call stands for (``arguments`` as a mapping or JSON text)."""
        tool = self.tool(name)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except ValueError as exc:
                raise PolicyError(
                    f"tool {name!r} was called with arguments that are not JSON: {exc}"
                ) from None
        if not isinstance(arguments, Mapping):
            raise PolicyError(
                f"tool {name!r} was called with {type(arguments).__name__} arguments, not an object"
            )
        action = {tool.via[0]: tool.name, tool.via[1]: dict(arguments)} if tool.via else dict(arguments)
        if tool.tag_field is not None:
            action[tool.tag_field] = tool.tag_value
        return action

    def action_from_text(self, text: str) -> dict[str, Any]:
        """RFC 0002: ``{<text field>: text}``."""
        if self.text_field is None:
            raise PolicyError("this env is not a text env (RFC 0002): its actions need tool calls")
        return {self.text_field: text}


def observation_text(observation: Mapping[str, Any]) -> str:
    """What a model is shown: RFC 0002's ``prompt`` or ``messages``, else the
    observation's own fields as JSON (reward and end signals left out)."""
    prompt = observation.get("prompt")
    if isinstance(prompt, str) and prompt:
        return prompt
    messages = observation.get("messages")
    if isinstance(messages, list) and messages:
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, Mapping))
    shown = {k: v for k, v in observation.items() if k not in _SIGNALS and v not in (None, "", [], {})}
    return json.dumps(shown, ensure_ascii=False, default=str)


def _resolve(root: Mapping[str, Any], node: Mapping[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return dict(root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {}))
    return dict(node)


def _members(action: Mapping[str, Any]) -> list[dict[str, Any]]:
    branches = action.get("oneOf") or action.get("anyOf")
    if isinstance(branches, list):
        return [_resolve(action, b) for b in branches if isinstance(b, Mapping)]
    return [dict(action)] if action else []


def _tag(member: Mapping[str, Any]) -> tuple[str | None, Any]:
    for name, prop in member.get("properties", {}).items():
        if isinstance(prop, Mapping) and "const" in prop:
            return str(name), prop["const"]
    return None, None


def _inline_refs(node: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """``node`` with ``$ref``s to the root's ``$defs`` replaced by their targets (tool
    parameters travel alone, without the root's ``$defs``)."""
    if depth > 20:
        return node
    if isinstance(node, Mapping):
        if isinstance(node.get("$ref"), str):
            return _inline_refs(_resolve(root, node), root, depth + 1)
        return {k: _inline_refs(v, root, depth + 1) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, root, depth + 1) for v in node]
    return node


def _tools(action: Mapping[str, Any]) -> list[Tool]:
    members = _members(action)
    tools = []
    for member in members:
        tag_field, tag_value = _tag(member) if len(members) > 1 else (None, None)
        drop = (*_HIDDEN, *([tag_field] if tag_field else []))
        props = {k: v for k, v in member.get("properties", {}).items() if k not in drop}
        required = [k for k in member.get("required", []) if k not in drop]
        params: dict[str, Any] = {"type": "object", "properties": _inline_refs(props, action)}
        if required:
            params["required"] = required
        name = str(tag_value) if tag_value is not None else _snake(str(member.get("title", "act")))
        tools.append(Tool(name, str(member.get("description", "")).strip(), params, tag_field, tag_value))
    return tools


def _mcp_call(action: Mapping[str, Any]) -> tuple[str | None, Any, tuple[str, str]] | None:
    """(tag field, tag value, (name field, arguments field)) of the member of ``action``
    that calls a named tool, or None."""
    members = _members(action)
    for member in members:
        props = member.get("properties", {})
        name = next((f for f in ("tool", "tool_name") if _is_string(props.get(f, {}))), None)
        if name is not None and props.get("arguments", {}).get("type") == "object":
            tag_field, tag_value = _tag(member) if len(members) > 1 else (None, None)
            return tag_field, tag_value, (name, "arguments")
    return None


def _snake(title: str) -> str:
    out = []
    for i, ch in enumerate(title):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out) or "act"


def _is_string(prop: Mapping[str, Any]) -> bool:
    if prop.get("type") == "string":
        return True
    return any(isinstance(p, Mapping) and p.get("type") == "string" for p in prop.get("anyOf", []))


def _text_field(action: Mapping[str, Any]) -> str | None:
    """RFC 0002: the one required string field (of the default member of a tagged
    union: the one member whose tag may be left out); None when there is none."""
    members = _members(action)
    if len(members) > 1:
        defaults = [m for m in members if _tag(m)[0] and _tag(m)[0] not in m.get("required", [])]
        if len(defaults) != 1:
            return None
        members = defaults
    if not members:
        return None
    member = members[0]
    props = member.get("properties", {})
    required = [k for k in member.get("required", []) if k not in _HIDDEN]
    strings = [k for k in required if _is_string(props.get(k, {}))]
    return str(strings[0]) if len(strings) == 1 and len(required) == 1 else None
