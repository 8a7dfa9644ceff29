"""``openenv.discovery``: upstream OpenEnv 0.10's names for catalogs (RFC 011), over
``openenv.catalog``. A name layer only: the profile, the builder, search and storage
are ``openenv.catalog``'s; see docs/catalog.md."""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .._exceptions import CatalogError as CatalogError
    from ..catalog._build import build_catalog as build_catalog
    from ..catalog._card import ENVIRONMENT_MEDIA_TYPE as ENVIRONMENT_MEDIA_TYPE
    from ..catalog._card import PROFILE_VERSION as PROFILE_VERSION
    from ..catalog._card import EnvironmentCard as EnvironmentCard
    from ..catalog._search import compare_catalogs as compare_catalogs
    from ..catalog._search import resolve_entry as resolve_entry
    from ..catalog._search import search_catalog as search_catalog
    from ..catalog._snapshot import CatalogChanges as CatalogChanges
    from ..catalog._snapshot import CatalogSnapshot as CatalogSnapshot
    from ..catalog._snapshot import DiscoveryEntry as DiscoveryEntry
    from ..catalog._snapshot import SearchMatch as SearchMatch
    from ..catalog._store import load_catalog as load_catalog
    from ..catalog._store import write_catalog as write_catalog

_NAMES = {
    "CatalogError": ".._exceptions",
    "build_catalog": "..catalog._build",
    **dict.fromkeys(("ENVIRONMENT_MEDIA_TYPE", "PROFILE_VERSION", "EnvironmentCard"), "..catalog._card"),
    **dict.fromkeys(("compare_catalogs", "resolve_entry", "search_catalog"), "..catalog._search"),
    **dict.fromkeys(
        ("CatalogChanges", "CatalogSnapshot", "DiscoveryEntry", "SearchMatch"), "..catalog._snapshot"
    ),
    **dict.fromkeys(("load_catalog", "write_catalog"), "..catalog._store"),
}

__all__ = [
    "ENVIRONMENT_MEDIA_TYPE",
    "PROFILE_VERSION",
    "CatalogChanges",
    "CatalogError",
    "CatalogSnapshot",
    "DiscoveryEntry",
    "EnvironmentCard",
    "SearchMatch",
    "build_catalog",
    "compare_catalogs",
    "load_catalog",
    "resolve_entry",
    "search_catalog",
    "write_catalog",
]

__getattr__, __dir__ = _lazy_exports(__name__, _NAMES, __all__)
