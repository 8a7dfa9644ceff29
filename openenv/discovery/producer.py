"""Upstream's ``openenv.discovery.producer``: ``build_catalog`` is ``openenv.catalog``'s."""

from ..catalog._build import build_catalog as build_catalog
from ..catalog._store import catalog_digest as catalog_digest
