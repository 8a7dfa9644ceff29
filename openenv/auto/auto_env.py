"""Upstream's ``openenv.auto.auto_env``: ``openenv.resolve``'s ``AutoEnv``, under upstream's
names.

The class asks this module's ``get_discovery``, ``_confirm_remote_install`` and
``_get_pip_command`` (which asks ``_has_uv``) on each call, so patching them here (as
upstream's users do) changes what ``AutoEnv`` does. Skipping the install gives upstream's
``GenericEnvClient``.
"""

from __future__ import annotations

import subprocess as subprocess  # upstream's users patch ``auto_env.subprocess.run``
from typing import Any

from ..core.generic_client import GenericEnvClient
from ..resolve import _auto_env as _ours
from ..resolve._install import _confirm_remote_install
from ._discovery import get_discovery

__all__ = ["AutoEnv"]


def _has_uv() -> bool:
    """Whether ``uv`` is on PATH."""
    return _ours.has_uv()


def _get_pip_command() -> list[str]:
    """``uv pip`` when uv is there, else this interpreter's pip."""
    return _ours.pip_command(_has_uv())


class AutoEnv(_ours.AutoEnv):
    """Factory of env clients by name; use the class methods, never an instance."""

    @classmethod
    def _discovery(cls) -> Any:
        return get_discovery()

    @classmethod
    def _confirm(cls, repo_id: str) -> bool:
        return _confirm_remote_install(repo_id)

    @classmethod
    def _pip_command(cls) -> list[str]:
        return _get_pip_command()

    @classmethod
    def _generic_client(cls) -> type[Any]:
        return GenericEnvClient
