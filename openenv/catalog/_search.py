"""Reading a complete snapshot: word search with exact filters, one entry by its
identifier, and two snapshots of one repository compared."""

from __future__ import annotations

import re

from .._exceptions import CatalogError
from ._snapshot import CatalogChanges, CatalogSnapshot, DiscoveryEntry, SearchMatch, SupersededEntry
from ._store import require_complete

#: The fields ``--filter field=value`` may name.
SUPPORTED_FILTERS = frozenset({"license", "provider", "artifact_availability", "name", "tags", "type"})
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def _values(entry: DiscoveryEntry, field: str) -> list[str]:
    if field == "tags":
        return list(entry.tags)
    if field == "type":
        return [entry.type]
    if field == "provider":
        return [entry.data.source.provider]
    return [str(getattr(entry.data, field))]


def search_catalog(
    snapshot: CatalogSnapshot, query: str, *, filters: dict[str, str] | None = None, limit: int = 20
) -> list[SearchMatch]:
    """Entries holding words of ``query`` in their name, description, tags, capabilities
    or example queries, best first (score: percent of the query's words found; an
    empty query lists every entry at 0), each passing every exact ``filters`` value."""
    require_complete(snapshot)
    if not 1 <= limit <= 1000:
        raise CatalogError(f"limit {limit} must be between 1 and 1000")
    if len(query) > 8192:
        raise CatalogError("Query exceeds the metadata query limit (8192 characters)")
    filters = filters or {}
    unknown = sorted(filters.keys() - SUPPORTED_FILTERS)
    if unknown:
        raise CatalogError(
            f"Unsupported filter: {', '.join(unknown)} (one of {', '.join(sorted(SUPPORTED_FILTERS))})"
        )
    wanted = _words(query)
    matches = []
    for entry in snapshot.entries:
        if any(value not in _values(entry, field) for field, value in filters.items()):
            continue
        text = [entry.display_name, entry.data.description, *entry.tags, *entry.capabilities]
        found = wanted & _words(" ".join([*text, *entry.representative_queries]))
        if wanted and not found:
            continue
        score = round(100 * len(found) / len(wanted)) if wanted else 0
        matches.append(SearchMatch(entry=entry, score=score))
    matches.sort(key=lambda m: (-m.score, m.entry.identifier))
    return matches[:limit]


def resolve_entry(snapshot: CatalogSnapshot, identifier: str) -> DiscoveryEntry:
    """The entry of exactly ``identifier`` (no prefix match, no URL guessed)."""
    require_complete(snapshot)
    for entry in snapshot.entries:
        if entry.identifier == identifier:
            return entry
    raise CatalogError(f"Entry not found in the configured catalog snapshot: {identifier}")


def compare_catalogs(previous: CatalogSnapshot, current: CatalogSnapshot) -> CatalogChanges:
    """What changed from ``previous`` to ``current`` (same publisher, repository and
    root), folder by folder."""
    require_complete(previous)
    require_complete(current)
    scope = (previous.publisher, previous.source.uri, previous.inventory.root)
    if scope != (current.publisher, current.source.uri, current.inventory.root):
        raise CatalogError("Catalog refresh must preserve publisher and inventory scope")
    old = {e.data.source.path: e for e in previous.entries}
    new = {e.data.source.path: e for e in current.entries}
    both = sorted(old.keys() & new.keys())
    return CatalogChanges(
        added=[new[p] for p in sorted(new.keys() - old.keys())],
        withdrawn=[old[p] for p in sorted(old.keys() - new.keys())],
        superseded=[
            SupersededEntry(previous=old[p], current=new[p])
            for p in both
            if old[p].identifier != new[p].identifier
        ],
        corrected=[
            SupersededEntry(previous=old[p], current=new[p])
            for p in both
            if old[p].identifier == new[p].identifier and old[p] != new[p]
        ],
    )
