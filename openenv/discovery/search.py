"""Upstream's ``openenv.discovery.search``: search, inspect and compare, ``openenv.catalog``'s."""

from ..catalog._search import SUPPORTED_FILTERS as SUPPORTED_FILTERS
from ..catalog._search import compare_catalogs as compare_catalogs
from ..catalog._search import resolve_entry as resolve_entry
from ..catalog._search import search_catalog as search_catalog
from ..catalog._store import require_complete as require_complete
