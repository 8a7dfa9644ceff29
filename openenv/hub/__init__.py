"""Publish envs as Hugging Face Docker Spaces and use them (extra ``openenv[hub]``).

``push`` uploads an env folder, ``pull`` downloads a Space's files, ``from_hub`` gives
a connected client (``EnvClient.from_hub`` / ``AsyncEnvClient.from_hub`` call it),
``list_envs`` the env Spaces (tagged ``openenv``) to choose from.
"""

from .._exceptions import HubError
from ._from_hub import HubTarget, from_hub, from_hub_async, resolve_hub_target, space_url
from ._list import HubEnv, list_envs
from ._push import PushResult, pull, push
from ._stage import stage_space

__all__ = [
    "HubEnv",
    "HubError",
    "HubTarget",
    "PushResult",
    "from_hub",
    "from_hub_async",
    "list_envs",
    "pull",
    "push",
    "resolve_hub_target",
    "space_url",
    "stage_space",
]
