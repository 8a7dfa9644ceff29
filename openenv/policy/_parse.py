"""A model's reply as an action, or as a parse failure.

A reply parses when it is what the env takes: on a text env answered by text
(RFC 0002), any text; where tools are offered, a call of one of the env's tools with
arguments that are a JSON object. A reply that does not parse (no tool call, a call
whose arguments are not JSON or not an object, an unknown tool) is a parse failure,
kept with its reason and the raw reply. The env still judges what it can: a text env
gets the reply's raw text as its action; an env that takes only tool calls gets
nothing, and the turn is a no-op (see ``openenv.eval``'s episode loop).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._exceptions import PolicyError
from ._space import ActionSpace

#: What a model is told after a turn that did nothing (a no-op turn).
REJECTED = "Your last reply was not a valid action ({reason}); nothing was done. {how}"
_HOW = "Act by calling exactly one of the tools, with arguments that are a JSON object."


def decide(
    actions: ActionSpace,
    calls: Sequence[Mapping[str, Any]],
    reply: str,
    *,
    tools: bool,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(action, parse_error)`` for a reply: its text ``reply`` and its tool ``calls``
    (``{"name", "arguments"}``, arguments as given: a mapping or JSON text); ``tools``:
    whether the model was offered tools (else it answers a text env by text).

    ``parse_error`` is None when the reply parses, else ``{"reason", "reply"}`` (and
    ``"call"``: the first call as the model wrote it). The action of a reply that does
    not parse is the raw text on a text env, None on an env without a text field."""
    if not tools and not calls:
        return actions.action_from_text(reply), None
    if calls:
        call = calls[0]  # one action per step: the first call is played
        try:
            return actions.action_from_call(str(call.get("name", "")), call.get("arguments") or {}), None
        except PolicyError as exc:
            reason = str(exc)
    elif "<tool_call>" in reply:
        reason = "a <tool_call> in the reply is not JSON with a name and arguments"
    else:
        reason = "the reply has no tool call"
    failure: dict[str, Any] = {"reason": reason, "reply": reply}
    if calls:
        failure["call"] = {"name": calls[0].get("name"), "arguments": calls[0].get("arguments")}
    action = actions.action_from_text(reply) if actions.text_field is not None else None
    return action, failure


def rejected(reason: str) -> str:
    """The note a chat agent puts before the next observation after a no-op turn."""
    return REJECTED.format(reason=reason.rstrip("."), how=_HOW)
