"""``EnvironmentInfo``: what discovery knows of one installed env package."""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any

from .._models import EnvModels


@dataclass
class EnvironmentInfo:
    """One discovered env: its key (``echo``), module (``echo_env``), package and the
    names of its client, action and observation classes (imported on demand)."""

    env_key: str
    name: str
    package_name: str
    version: str
    description: str
    client_module_path: str
    client_class_name: str
    action_class_name: str
    observation_class_name: str
    default_image: str
    spec_version: int | None = None
    manifest: dict[str, Any] | None = None

    def get_client_class(self) -> type[Any]:
        """The env's client class, imported from ``client_module_path``."""
        return self._load(self.client_class_name, "client")

    def get_action_class(self) -> type[Any]:
        """The env's action class (from its client module, else ``models`` or the package)."""
        return self._load(self.action_class_name, "action")

    def get_observation_class(self) -> type[Any]:
        """The env's observation class (looked up as :meth:`get_action_class` does)."""
        return self._load(self.observation_class_name, "observation")

    def _load(self, class_name: str, role: str) -> type[Any]:
        top = self.client_module_path.rsplit(".", 1)[0]
        places = dict.fromkeys([self.client_module_path, f"{top}.models", top])
        try:
            first = importlib.import_module(self.client_module_path)
        except ImportError as exc:
            ours = _env_of_ours(top) if getattr(exc, "name", None) == self.client_module_path else None
            if ours is not None and role in ours:
                return ours[role]
            raise ImportError(
                f"cannot import {self.client_module_path} for {class_name}: {exc}; "
                f"is the package installed? pip install {self.package_name}"
            ) from exc
        found = getattr(first, class_name, None)
        for place in list(places)[1:]:
            if found is not None:
                break
            try:
                found = getattr(importlib.import_module(place), class_name, None)
            except ImportError:
                continue
        if not isinstance(found, type):
            raise ImportError(f"no class {class_name} in {', '.join(places)} (package {self.package_name})")
        return found


@functools.cache
def _env_of_ours(module_name: str) -> dict[str, type[Any]] | None:
    """For an env package of ours (models in ``MODELS``, no ``client.py``): its classes by
    role: ``action``, ``observation``, and ``client``, an upstream-style client class made
    from its models (``openenv.client``'s ``models_client``). None for any other package."""
    try:
        models = getattr(importlib.import_module(module_name), "MODELS", None)
    except ImportError:
        return None
    if not isinstance(models, EnvModels):
        return None
    from ..client._hooks_ready import models_client

    found: dict[str, type[Any]] = {"client": models_client(models, _client_name(module_name))}
    for role, cls in (("action", models.action), ("observation", models.observation)):
        if isinstance(cls, type):
            found[role] = cls
    return found


def _client_name(module_name: str) -> str:
    """``echo_env`` -> ``EchoEnv`` (upstream's name for the client class)."""
    return "".join(part.capitalize() for part in module_name.removesuffix("_env").split("_")) + "Env"
