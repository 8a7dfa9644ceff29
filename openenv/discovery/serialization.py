"""Upstream's ``openenv.discovery.serialization``: snapshots on disk, ``openenv.catalog``'s."""

from ..catalog._declare import parse_json as parse_json
from ..catalog._store import catalog_digest as catalog_digest
from ..catalog._store import load_catalog as load_catalog
from ..catalog._store import require_complete as require_complete
from ..catalog._store import write_catalog as write_catalog
