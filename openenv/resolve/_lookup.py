"""Finding an env by name for ``AutoEnv`` / ``AutoAction``, with helpful errors."""

from __future__ import annotations

import difflib
from typing import Any

from ._info import EnvironmentInfo
from ._names import env_key_of

NO_ENVS = (
    "No OpenEnv environments found. Install one with: pip install openenv-<env-name>, "
    "or name a Hugging Face Space: AutoEnv.from_hub('org/name')"
)


def unknown_env(name: str, known: list[str]) -> ValueError:
    """The error for a name no installed env answers to: close matches first."""
    if not known:
        return ValueError(NO_ENVS)
    close = difflib.get_close_matches(env_key_of(name), known, n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    available = ", ".join(sorted(known))
    return ValueError(f"Unknown environment {name!r}.{hint} Available environments: {available}")


def find_env(discovery: Any, name: str) -> EnvironmentInfo:
    """The installed env ``name`` means, else a ValueError naming what is installed."""
    info: EnvironmentInfo | None = discovery.get_environment_by_name(name)
    if info is None:
        raise unknown_env(name, list(discovery.discover()))
    return info


def import_failed(what: str, name: str, info: EnvironmentInfo, exc: ImportError) -> ImportError:
    """The error for an installed env whose ``what`` class cannot be imported."""
    return ImportError(
        f"Failed to import the {what} of env {name!r} from {info.client_module_path} "
        f"(package {info.package_name}): {exc}. "
        f"Try to reinstall it: pip install --force-reinstall {info.package_name}"
    )
