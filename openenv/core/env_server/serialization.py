"""Upstream's helpers between JSON dicts and action/observation models: ours
(``openenv.server._upstream_app``); ``serialize_observation`` gives the dict our
server sends."""

from ...server._upstream_app import (
    deserialize_action,
    deserialize_action_with_preprocessing,
    serialize_observation,
)

__all__ = ["deserialize_action", "deserialize_action_with_preprocessing", "serialize_observation"]
