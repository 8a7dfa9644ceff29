"""``openenv catalog build|inspect|diff`` and ``openenv discover``: arguments and output
only. Exit codes: 0 done, 1 a catalog built with broken env folders (written, each
reported), 2 bad input (one line, no traceback)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def _fail(command: str, exc: Exception) -> int:
    print(f"openenv {command}: {exc}", file=sys.stderr)
    return 2


def _build(args: argparse.Namespace) -> int:
    from .._exceptions import CatalogError
    from ._build import build_catalog
    from ._store import write_catalog

    try:
        snapshot = build_catalog(
            args.repository,
            repository_uri=args.repository_uri,
            publisher=args.publisher,
            namespace=args.namespace,
            revision=args.revision,
            root=args.root,
        )
        write_catalog(snapshot, args.output)
    except CatalogError as exc:
        return _fail("catalog build", exc)
    failed = [i for i in snapshot.issues if i.severity == "error"]
    print(
        f"{args.output}: {len(snapshot.entries)} entries at {snapshot.source.revision[:12]}, "
        f"{len(failed)} env folder(s) failed, {snapshot.digest[:19]}"
    )
    for issue in snapshot.issues:
        print(f"  {issue.severity}: {issue.path}: {issue.message} [{issue.code}]")
    return 1 if failed else 0


def _inspect(args: argparse.Namespace) -> int:
    from .._exceptions import CatalogError
    from ._search import resolve_entry
    from ._store import load_catalog

    try:
        entry = resolve_entry(load_catalog(args.catalog), args.identifier)
    except CatalogError as exc:
        return _fail("catalog inspect", exc)
    print(entry.model_dump_json(by_alias=True, exclude_none=True, indent=2))
    return 0


def _diff(args: argparse.Namespace) -> int:
    from .._exceptions import CatalogError
    from ._search import compare_catalogs
    from ._store import load_catalog

    try:
        changes = compare_catalogs(load_catalog(args.old), load_catalog(args.new))
    except CatalogError as exc:
        return _fail("catalog diff", exc)
    if args.json:
        print(changes.model_dump_json(by_alias=True, exclude_none=True, indent=2))
        return 0
    for label, entries in (("added", changes.added), ("withdrawn", changes.withdrawn)):
        for e in entries:
            print(f"{label:10} {e.data.source.path} @ {e.data.source.revision[:12]}")
    for label, pairs in (("superseded", changes.superseded), ("corrected", changes.corrected)):
        for p in pairs:
            was, now = p.previous.data.source, p.current.data.source
            print(f"{label:10} {now.path} @ {was.revision[:12]} -> {now.revision[:12]}")
    if not (changes.added or changes.withdrawn or changes.superseded or changes.corrected):
        print("no changes")
    return 0


def _filters(raw: list[str]) -> dict[str, str]:
    filters: dict[str, str] = {}
    for item in raw:
        key, eq, value = item.partition("=")
        if not eq or not key or key in filters:
            raise ValueError(f"--filter {item!r}: filters must be distinct field=value pairs")
        filters[key] = value
    return filters


def _discover(args: argparse.Namespace) -> int:
    from .._exceptions import CatalogError
    from ._search import search_catalog
    from ._store import load_catalog

    try:
        snapshot = load_catalog(args.catalog)
        matches = search_catalog(
            snapshot, " ".join(args.query), filters=_filters(args.filter or []), limit=args.limit
        )
    except (CatalogError, ValueError) as exc:
        return _fail("discover", exc)
    if args.json:
        results = [
            {**m.entry.model_dump(by_alias=True, exclude_none=True, mode="json"), "score": m.score}
            for m in matches
        ]
        print(json.dumps({"results": results, "snapshot": snapshot.digest, "metadataOnly": True}, indent=2))
        return 0
    for m in matches:
        card = m.entry.data
        print(f"{m.entry.display_name} ({m.score}): {card.description}")
        print(f"  {card.source.uri} {card.source.path} @ {card.source.revision}")
        print(f"  license {card.license}; tags {', '.join(m.entry.tags) or '-'}")
        print(f"  {m.entry.identifier}")
    print(f"{len(matches)} match(es). Metadata only: nothing was fetched or run.")
    return 0


def add_commands(sub: Any) -> None:
    """Register ``catalog`` (build, inspect, diff) and ``discover`` on the CLI's subparsers."""
    p = sub.add_parser("catalog", help="build and read catalogs of envs pinned to a commit (docs/catalog.md)")
    cmds = p.add_subparsers(dest="catalog_command", metavar="{build,inspect,diff}", required=True)

    b = cmds.add_parser("build", help="catalog every env folder of a Git repository at one commit")
    b.add_argument(
        "--repository", required=True, help="a local Git repository (only committed files are read)"
    )
    b.add_argument(
        "--repository-uri", required=True, help="where readers get it: https://github.com/OWNER/NAME.git"
    )
    b.add_argument("--publisher", required=True, help="the DNS name publishing the catalog, e.g. example.org")
    b.add_argument("--output", required=True, help="the snapshot JSON file to write")
    b.add_argument("--revision", default="HEAD", help="commit or ref to catalog (default HEAD)")
    b.add_argument(
        "--root", default="envs", help="folder whose direct children are env folders (default envs)"
    )
    b.add_argument(
        "--namespace", default="openenv", help="the publisher's name for this catalog (default openenv)"
    )
    b.set_defaults(func=_build)

    i = cmds.add_parser("inspect", help="print one entry of a catalog by its exact identifier")
    i.add_argument("identifier", help="the entry's urn:air:... identifier")
    i.add_argument("--catalog", required=True, help="a complete snapshot JSON file")
    i.set_defaults(func=_inspect)

    d = cmds.add_parser("diff", help="what changed between two catalogs of one repository")
    d.add_argument("old", help="the earlier snapshot")
    d.add_argument("new", help="the later snapshot")
    d.add_argument("--json", action="store_true", help="print the changes as JSON")
    d.set_defaults(func=_diff)

    q = sub.add_parser("discover", help="search a catalog for envs by task (nothing is fetched or run)")
    q.add_argument("query", nargs="*", help="words describing the task (none: list every entry)")
    q.add_argument("--catalog", required=True, help="a complete snapshot JSON file")
    q.add_argument("--limit", type=int, default=20, help="at most this many results, 1 to 1000 (default 20)")
    q.add_argument(
        "--filter", action="append", metavar="FIELD=VALUE", help="exact match on license, name, tags, ..."
    )
    q.add_argument("--json", action="store_true", help="print the matching entries as JSON")
    q.set_defaults(func=_discover)
