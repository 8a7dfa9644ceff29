"""``AutoAction``: the action class of an env named by its installed package or Space."""

from __future__ import annotations

from typing import Any

from ..client._hooks_ready import DictAction
from ._auto_env import AutoEnv
from ._discovery import EnvironmentDiscovery, get_discovery
from ._lookup import NO_ENVS, find_env, import_failed
from ._names import _is_hub_url

__all__ = ["AutoAction"]


class AutoAction:
    """Factory of action classes by env name; use the class methods, never an instance.

    Discovery, the generic action and the ``AutoEnv`` that installs a Space's package
    are the hooks ``_discovery``, ``_generic_action`` and ``_auto_env`` (``openenv.auto``
    maps them to upstream's names)."""

    def __init__(self) -> None:
        raise TypeError(
            "AutoAction is a factory class and is not instantiated: "
            "use AutoAction.from_hub() or AutoAction.from_env() for an action class"
        )

    @classmethod
    def _discovery(cls) -> EnvironmentDiscovery:
        return get_discovery()

    @classmethod
    def _generic_action(cls) -> type[Any]:
        return DictAction

    @classmethod
    def _auto_env(cls) -> type[AutoEnv]:
        return AutoEnv

    @classmethod
    def from_hub(cls, name: str, trust_remote_code: bool = False, skip_install: bool = False) -> type[Any]:
        """The action class of env ``name`` (``echo``, ``echo-env`` or a Space
        ``org/name``, whose package is installed first when missing). With
        ``skip_install`` it is the generic, dict-like action."""
        if skip_install:
            return cls._generic_action()
        env_name = name
        if _is_hub_url(name):
            env_name = cls._auto_env()._ensure_package_from_hub(name, trust_remote_code=trust_remote_code)
        info = find_env(cls._discovery(), env_name)
        try:
            return info.get_action_class()
        except ImportError as exc:
            raise import_failed("action class", env_name, info, exc) from exc

    #: Upstream's other names for the same factory.
    from_env = from_hub
    from_name = from_hub

    @classmethod
    def get_action_info(cls, name: str) -> dict[str, Any]:
        """The names of installed env ``name``'s action and observation classes."""
        info = find_env(cls._discovery(), name)
        return {
            "env_key": info.env_key,
            "env_name": info.name,
            "package": info.package_name,
            "action_class": info.action_class_name,
            "observation_class": info.observation_class_name,
            "module": info.client_module_path,
        }

    @classmethod
    def list_actions(cls) -> None:
        """Print each installed env's action class."""
        environments = cls._discovery().discover()
        rule = "-" * 70
        print("Available Action Classes:")
        print(rule)
        if not environments:
            print(f"  {NO_ENVS}")
        for key in sorted(environments):
            print(f"  {key:<15}: {environments[key].action_class_name}")
        print(rule)
        print(f"Total: {len(environments)} action classes")
