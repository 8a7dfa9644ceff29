"""Text envs (RFC 0002): find the prompt in an observation and the string field of an action.

No torch here: the CLI and tests use it without the ``train`` extra.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._exceptions import OpenEnvError


class NotATextEnv(OpenEnvError):
    """The env's models do not follow RFC 0002 and no adapter was given."""


@dataclass(frozen=True)
class TextEnv:
    """How to drive one env: observation -> text, text -> action."""

    observation_text: Callable[[Mapping[str, Any]], str]
    make_action: Callable[[str], dict[str, Any]]
    action_field: str | None = None


def observation_text(observation: Mapping[str, Any]) -> str:
    """RFC 0002: ``prompt``, else the contents of ``messages`` joined by newlines."""
    prompt = observation.get("prompt")
    if isinstance(prompt, str):
        return str(prompt)
    messages = observation.get("messages")
    if isinstance(messages, list):
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, Mapping))
    raise NotATextEnv(
        "observation has neither 'prompt: str' nor 'messages: [{role, content}]' (RFC 0002); "
        "pass an observation_text adapter"
    )


def action_field(action_schema: Mapping[str, Any]) -> str:
    """The one required string field of an action's JSON Schema (RFC 0002).

    For a tagged union (``oneOf``/``anyOf``), the field of its default member: the one
    member whose tag may be left out (every other member requires its tag).
    """
    action_schema = _default_member(action_schema)
    props: Mapping[str, Any] = action_schema.get("properties", {})
    required = [k for k in action_schema.get("required", []) if k != "metadata"]
    strings = [k for k in required if _is_string(props.get(k, {}))]
    if len(strings) != 1 or len(required) != 1:
        title = action_schema.get("title", "the action")
        raise NotATextEnv(
            f"{title} needs exactly one required string field for a text env (RFC 0002), "
            f"has required fields {required}; pass a make_action adapter"
        )
    return str(strings[0])


def _default_member(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    branches = schema.get("oneOf") or schema.get("anyOf")
    if not isinstance(branches, list):
        return schema
    members = [_resolve(schema, b) for b in branches if isinstance(b, Mapping)]
    defaults = [m for m in members if _tag_optional(m)]
    if len(defaults) != 1:
        title = schema.get("title", "the action")
        raise NotATextEnv(
            f"{title} is a union of {len(members)} actions with {len(defaults)} that may leave out "
            "their tag; a text env's union needs exactly one default member (RFC 0002); "
            "pass a make_action adapter"
        )
    return defaults[0]


def _tag_optional(member: Mapping[str, Any]) -> bool:
    """A member with a tag (a ``const`` property) that its schema does not require."""
    props: Mapping[str, Any] = member.get("properties", {})
    tags = [k for k, p in props.items() if isinstance(p, Mapping) and "const" in p]
    return bool(tags) and not set(tags) & set(member.get("required", []))


def _resolve(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    if not ref.startswith("#/$defs/"):
        raise NotATextEnv(f"cannot follow $ref {ref!r} in the action schema; pass a make_action adapter")
    target = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
    if not isinstance(target, Mapping):
        raise NotATextEnv(f"the action schema has no {ref!r}; pass a make_action adapter")
    return target


def _is_string(prop: Mapping[str, Any]) -> bool:
    if prop.get("type") == "string":
        return True
    return any(p.get("type") == "string" for p in prop.get("anyOf", []) if isinstance(p, Mapping))


def fetch_schema(base_url: str, timeout_s: float = 10.0) -> dict[str, Any]:
    """``GET {base_url}/schema`` (RFC 0001)."""
    url = base_url.rstrip("/")
    if url.startswith("ws"):
        url = "http" + url[2:]
    url = url.removesuffix("/ws")
    with urllib.request.urlopen(url + "/schema", timeout=timeout_s) as reply:
        data: dict[str, Any] = json.loads(reply.read())
    return data


def text_env(
    schema: Mapping[str, Any],
    *,
    observation_adapter: Callable[[Mapping[str, Any]], str] | None = None,
    action_adapter: Callable[[str], dict[str, Any]] | None = None,
) -> TextEnv:
    """The ``TextEnv`` for an env's ``/schema``; adapters override either half."""
    obs = observation_adapter or observation_text
    if observation_adapter is None:
        props = schema.get("observation", {}).get("properties", {})
        if "prompt" not in props and "messages" not in props:
            raise NotATextEnv(
                f"{schema.get('observation', {}).get('title', 'the observation')} has no 'prompt' or "
                "'messages' field (RFC 0002); pass an observation_text adapter"
            )
    if action_adapter is not None:
        return TextEnv(obs, action_adapter)
    name = action_field(schema.get("action", {}))
    return TextEnv(obs, lambda text: {name: text}, name)
