"""``openenv.catalog``: catalogs of envs, pinned to a commit (RFC 011's profile).

``build_catalog`` reads the committed metadata of every env folder of a Git repository
(its ``openenv.yaml`` through our manifest parser, ``validation:`` block included) and
makes a snapshot: one entry per env, or an issue saying why not. ``search_catalog``,
``resolve_entry`` and ``compare_catalogs`` read complete snapshots. The CLI is
``openenv catalog build|inspect|diff`` and ``openenv discover``; see docs/catalog.md.
``openenv.discovery`` gives the same classes under upstream OpenEnv 0.10's names.
"""

from __future__ import annotations

import typing

from .._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from .._exceptions import CatalogError, MetadataError
    from ._build import build_catalog
    from ._card import ENVIRONMENT_MEDIA_TYPE, PROFILE_VERSION, EnvironmentCard
    from ._declare import DiscoveryDeclaration
    from ._search import compare_catalogs, resolve_entry, search_catalog
    from ._snapshot import CatalogChanges, CatalogIssue, CatalogSnapshot, DiscoveryEntry, SearchMatch
    from ._store import catalog_digest, load_catalog, read_catalog, write_catalog

__all__ = [
    "ENVIRONMENT_MEDIA_TYPE",
    "PROFILE_VERSION",
    "CatalogChanges",
    "CatalogError",
    "CatalogIssue",
    "CatalogSnapshot",
    "DiscoveryDeclaration",
    "DiscoveryEntry",
    "EnvironmentCard",
    "MetadataError",
    "SearchMatch",
    "build_catalog",
    "catalog_digest",
    "compare_catalogs",
    "load_catalog",
    "read_catalog",
    "resolve_entry",
    "search_catalog",
    "write_catalog",
]

_WHERE = {
    "CatalogError": ".._exceptions",
    "MetadataError": ".._exceptions",
    "build_catalog": "._build",
    "ENVIRONMENT_MEDIA_TYPE": "._card",
    "PROFILE_VERSION": "._card",
    "EnvironmentCard": "._card",
    "DiscoveryDeclaration": "._declare",
    **dict.fromkeys(("compare_catalogs", "resolve_entry", "search_catalog"), "._search"),
    **dict.fromkeys(
        ("CatalogChanges", "CatalogIssue", "CatalogSnapshot", "DiscoveryEntry", "SearchMatch"), "._snapshot"
    ),
    **dict.fromkeys(("catalog_digest", "load_catalog", "read_catalog", "write_catalog"), "._store"),
}

__getattr__, __dir__ = _lazy_exports(__name__, _WHERE, __all__)
