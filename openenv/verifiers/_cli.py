"""``openenv import``: argument parsing and the one-line errors; ``write_env_package`` does the rest."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def _fail(message: str) -> int:
    print(f"openenv import: {message}", file=sys.stderr)
    return 2


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object, e.g. '{{\"difficulty\": \"hard\"}}'")
    return value


def _splits(items: list[str] | None) -> dict[str, dict[str, Any]] | None:
    """``--split NAME=JSON`` items as ``{name: config}``; None when none was given."""
    if not items:
        return None
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--split {item!r} is not NAME=JSON (e.g. test='{{\"split\": \"test\"}}')")
        out[name] = _json_object(text or "{}", f"--split {name}")
    return out


def _import(args: argparse.Namespace) -> int:
    from .._exceptions import EnvNotFound, InitError, MissingExtra, ServeFailed

    if args.limit is not None and args.limit < 1:
        return _fail(f"--limit {args.limit} is not a positive number of tasks")
    try:
        config = _json_object(args.config, "--config") if args.config is not None else None
        splits = _splits(args.split)
    except ValueError as exc:
        return _fail(str(exc))
    cwd = os.getcwd()  # a taskset module in the current folder, after the installed ones
    if "" not in sys.path and cwd not in sys.path:
        sys.path.append(cwd)
    from ._package import write_env_package

    try:
        folder = write_env_package(args.module, args.dest, config=config, splits=splits, limit=args.limit)
    except (EnvNotFound, ServeFailed, InitError, MissingExtra) as exc:  # EnvKwargsError is a ServeFailed
        return _fail(str(exc))
    print(f"openenv import: wrote {folder} (verifiers taskset {args.module}); "
          f"next: openenv validate {folder}")
    return 0


def add_commands(sub: Any) -> None:
    """Add ``import`` to the ``openenv`` parser's subcommands."""
    p = sub.add_parser("import", help="write a verifiers taskset out as an env package folder")
    p.add_argument("module", help="the verifiers taskset: an installed module exporting a vf.Taskset")
    p.add_argument("dest", help="the folder to write (new, or empty)")
    p.add_argument("--config", metavar="JSON", help="the taskset's config fields, a JSON object")
    p.add_argument(
        "--split",
        action="append",
        metavar="NAME=JSON",
        help="a split served as the taskset loaded with these config fields (repeat; default: one, train)",
    )
    p.add_argument(
        "--limit", type=int, metavar="N", help="serve the first N tasks (needed for an infinite taskset)"
    )
    p.set_defaults(func=_import)
