"""Upstream's ``openenv.auto.auto_action``: ``openenv.resolve``'s ``AutoAction``, under
upstream's names.

The class asks this module's ``get_discovery`` on each call (upstream's users patch it
here); skipping the install gives upstream's ``GenericAction``, and a Space's package is
installed by ``openenv.auto``'s ``AutoEnv``.
"""

from __future__ import annotations

from typing import Any

from ..core.generic_client import GenericAction
from ..resolve import _auto_action as _ours
from ._discovery import get_discovery
from .auto_env import AutoEnv

__all__ = ["AutoAction"]


class AutoAction(_ours.AutoAction):
    """Factory of action classes by env name; use the class methods, never an instance."""

    @classmethod
    def _discovery(cls) -> Any:
        return get_discovery()

    @classmethod
    def _generic_action(cls) -> type[Any]:
        return GenericAction

    @classmethod
    def _auto_env(cls) -> type[AutoEnv]:
        return AutoEnv
