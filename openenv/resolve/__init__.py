"""``openenv.resolve``: env clients and action classes by env name.

``AutoEnv.from_env("echo")`` gives a client of the installed ``openenv-echo*`` package,
``AutoEnv.from_env("org/name")`` one of a Hugging Face Space (its package installed
first, with consent); ``AutoAction.from_hub(...)`` gives the env's action class.
``EnvironmentDiscovery`` finds the installed env packages and caches them per user.
Upstream OpenEnv's names for the same classes are ``openenv.auto``'s (a name layer).
"""

from __future__ import annotations

import typing

from .._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from ._auto_action import AutoAction
    from ._auto_env import AutoEnv
    from ._discovery import EnvironmentDiscovery, get_discovery, reset_discovery
    from ._info import EnvironmentInfo

__all__ = [
    "AutoAction",
    "AutoEnv",
    "EnvironmentDiscovery",
    "EnvironmentInfo",
    "get_discovery",
    "reset_discovery",
]

_WHERE = {
    "AutoAction": "._auto_action",
    "AutoEnv": "._auto_env",
    **dict.fromkeys(("EnvironmentDiscovery", "get_discovery", "reset_discovery"), "._discovery"),
    "EnvironmentInfo": "._info",
}

__getattr__, __dir__ = _lazy_exports(__name__, _WHERE, __all__)
