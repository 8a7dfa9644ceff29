"""``AutoAction``: the action class of an env named by its installed package or Space."""

from __future__ import annotations

from typing import Any

from ._discovery import get_discovery
from ._lookup import NO_ENVS, find_env, import_failed
from ._names import _is_hub_url

__all__ = ["AutoAction"]


class AutoAction:
    """Factory of action classes by env name; use the class methods, never an instance."""

    def __init__(self) -> None:
        raise TypeError(
            "AutoAction is a factory class and is not instantiated: "
            "use AutoAction.from_hub() or AutoAction.from_env() for an action class"
        )

    @classmethod
    def from_hub(cls, name: str, trust_remote_code: bool = False, skip_install: bool = False) -> type[Any]:
        """The action class of env ``name`` (``echo``, ``echo-env`` or a Space
        ``org/name``, whose package is installed first when missing). With
        ``skip_install`` it is the generic, dict-like action."""
        if skip_install:
            from ..core.generic_client import GenericAction

            return GenericAction
        env_name = name
        if _is_hub_url(name):
            from .auto_env import AutoEnv

            env_name = AutoEnv._ensure_package_from_hub(name, trust_remote_code=trust_remote_code)
        info = find_env(get_discovery(), env_name)
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
        info = find_env(get_discovery(), name)
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
        environments = get_discovery().discover()
        rule = "-" * 70
        print("Available Action Classes:")
        print(rule)
        if not environments:
            print(f"  {NO_ENVS}")
        for key in sorted(environments):
            print(f"  {key:<15}: {environments[key].action_class_name}")
        print(rule)
        print(f"Total: {len(environments)} action classes")
