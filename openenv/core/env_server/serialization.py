"""Upstream's helpers between JSON dicts and action/observation models.

``serialize_observation`` gives upstream's observation reply: the same dict our server
sends (``openenv._protocol.observation_data``) for an upstream peer.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ..._protocol import observation_data
from ._adapter import accepting_mcp_actions
from .types import Observation

__all__ = ["deserialize_action", "deserialize_action_with_preprocessing", "serialize_observation"]

def deserialize_action(action_data: dict[str, Any], action_cls: type[Any]) -> Any:
    """Validate ``action_data`` as ``action_cls`` (MCP payloads recognised by ``type``
    when it is the base ``Action`` or an MCP action, as the server does)."""
    return accepting_mcp_actions(action_cls).model_validate(action_data)


def deserialize_action_with_preprocessing(action_data: dict[str, Any], action_cls: type[Any]) -> Any:
    """As ``deserialize_action``, after the conversions web forms need: JSON-string tool
    arguments parsed, ``tokens`` lists made tensors (when torch is there), a string
    ``action_id`` made an int."""
    data = dict(action_data)
    if data.get("type") == "call_tool" and isinstance(data.get("arguments"), str):
        with contextlib.suppress(ValueError):
            data["arguments"] = json.loads(data["arguments"])
    if data.get("type") in ("list_tools", "call_tool"):
        return deserialize_action(data, action_cls)
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
    return deserialize_action(data, action_cls)


def _tensor(values: list[Any]) -> Any:
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.long)


def serialize_observation(observation: Observation) -> dict[str, Any]:
    """``{"observation", "reward", "done"}`` plus ``metadata`` when it is not empty."""
    return observation_data(observation, binary=False, extended=False)
