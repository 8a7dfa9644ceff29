"""Upstream's ``Environment`` base class and its companions: ours, of upstream's shape
(``openenv.server._upstream_env``)."""

from ...server._upstream_env import (
    Action,
    Environment,
    EnvironmentMetadata,
    Message,
    ModelTokenizer,
    Observation,
    State,
    TaskProvider,
    Transform,
)

__all__ = [
    "Action", "Environment", "EnvironmentMetadata", "Message", "ModelTokenizer", "Observation", "State",
    "TaskProvider", "Transform",
]
