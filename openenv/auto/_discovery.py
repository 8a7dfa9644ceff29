"""Upstream's ``openenv.auto._discovery``: the installed-package discovery of
``openenv.resolve``, under upstream's names.

``_create_env_info_from_package`` and ``_load_manifest_from_package`` are looked up here
on each call, so patching them here (as upstream's users do) changes what discovery records.
"""

from __future__ import annotations

from ..resolve import _discovery as _ours
from ..resolve._discovery import _load_manifest_from_package
from ..resolve._info import EnvironmentInfo
from ..resolve._names import _infer_class_name, _is_hub_url, _normalize_env_name

__all__ = [
    "EnvironmentDiscovery",
    "EnvironmentInfo",
    "_create_env_info_from_package",
    "_infer_class_name",
    "_is_hub_url",
    "_load_manifest_from_package",
    "_normalize_env_name",
    "get_discovery",
    "reset_discovery",
]


def _create_env_info_from_package(
    package_name: str, module_name: str, version: str
) -> EnvironmentInfo | None:
    """What discovery records for module ``module_name`` of distribution ``package_name``."""
    return _ours.env_info_from(
        package_name, module_name, version, _load_manifest_from_package(package_name, module_name)
    )


class EnvironmentDiscovery(_ours.EnvironmentDiscovery):
    """Finds installed env packages (``openenv.resolve``'s), through this module's names."""

    def _info_of(self, package: str, module: str, version: str) -> EnvironmentInfo | None:
        return _create_env_info_from_package(package, module, version)


def get_discovery() -> _ours.EnvironmentDiscovery:
    """The process-wide discovery (made on first use)."""
    return _ours.get_discovery(EnvironmentDiscovery)


reset_discovery = _ours.reset_discovery
