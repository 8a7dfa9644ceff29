"""Upstream's helpers between JSON dicts and action/observation models.

``serialize_observation`` gives upstream's observation reply: the same dict our server
sends (``openenv._protocol.observation_data``) for an upstream peer.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ..._models import Action as _OurAction
from ..._protocol import observation_data
from .mcp_types import CallToolAction, ListToolsAction
from .types import Action, Observation

__all__ = ["deserialize_action", "deserialize_action_with_preprocessing", "serialize_observation"]

_MCP_ACTIONS: dict[str, type[Action]] = {"list_tools": ListToolsAction, "call_tool": CallToolAction}


def _mcp_action(data: dict[str, Any], action_cls: type[Any]) -> Action | None:
    """A ``list_tools``/``call_tool`` payload, when the env's action class is the base
    ``Action`` or an MCP action (an env's own action model stays authoritative)."""
    mcp_cls = _MCP_ACTIONS.get(data.get("type"))  # type: ignore[arg-type]
    if mcp_cls is None:
        return None
    if action_cls in (Action, _OurAction, *_MCP_ACTIONS.values()):
        return mcp_cls.model_validate(data)
    return None


def deserialize_action(action_data: dict[str, Any], action_cls: type[Any]) -> Any:
    """Validate ``action_data`` as ``action_cls`` (MCP payloads recognised by ``type``)."""
    mcp = _mcp_action(action_data, action_cls)
    return mcp if mcp is not None else action_cls.model_validate(action_data)


def deserialize_action_with_preprocessing(action_data: dict[str, Any], action_cls: type[Any]) -> Any:
    """As ``deserialize_action``, after the conversions web forms need: JSON-string tool
    arguments parsed, ``tokens`` lists made tensors (when torch is there), a string
    ``action_id`` made an int."""
    data = dict(action_data)
    if data.get("type") == "call_tool" and isinstance(data.get("arguments"), str):
        with contextlib.suppress(ValueError):
            data["arguments"] = json.loads(data["arguments"])
    mcp = _mcp_action(data, action_cls)
    if mcp is not None:
        return mcp
    tokens = data.get("tokens")
    if isinstance(tokens, str):
        try:
            tokens = json.loads(tokens)
        except ValueError:
            tokens = []
    if isinstance(tokens, list):
        data["tokens"] = _tensor(tokens)
    action_id = data.get("action_id")
    if isinstance(action_id, str):
        with contextlib.suppress(ValueError):
            data["action_id"] = int(action_id)
    return action_cls.model_validate(data)


def _tensor(values: list[Any]) -> Any:
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.long)


def serialize_observation(observation: Observation) -> dict[str, Any]:
    """``{"observation", "reward", "done"}`` plus ``metadata`` when it is not empty."""
    return observation_data(observation, binary=False, extended=False)
