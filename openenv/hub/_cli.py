"""``openenv push`` and ``openenv pull``: argument parsing and output only."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._extras import require


def _bad_repo_id(command: str, repo_id: str) -> bool:
    """Print the one line and say so when ``repo_id`` is not ``ORG/NAME``."""
    from .._exceptions import HubError
    from ._push import check_repo_id

    try:
        check_repo_id(repo_id)
    except HubError as exc:
        print(f"openenv {command}: {exc}", file=sys.stderr)
        return True
    return False


def _push(args: argparse.Namespace) -> int:
    from .._exceptions import HubError
    from .._manifest import ManifestError
    from ._push import push

    # Everything push needs is the hub extra's (openenv.yaml is read with its pyyaml).
    require("yaml", extra="hub", feature="openenv push")
    if not args.dry_run:
        require("huggingface_hub", extra="hub", feature="openenv push")
    if _bad_repo_id("push", args.repo_id):
        return 2
    try:
        result = push(args.path, args.repo_id, private=args.private, dry_run=args.dry_run, token=args.token)
    except ManifestError as exc:  # bad input: no env folder, or its openenv.yaml is wrong
        print(f"openenv push: {exc}", file=sys.stderr)
        return 2
    except HubError as exc:
        print(f"openenv push: {exc}", file=sys.stderr)
        return 1
    if result.dry_run:
        print(f"dry run: would upload {len(result.files)} files to Space {result.repo_id}"
              f" ({'private' if result.private else 'public'}):")
    else:
        print(f"pushed {len(result.files)} files to {result.url} (commit {result.commit})")
    for name in result.files:
        print(f"  {name}")
    return 0


def _pull(args: argparse.Namespace) -> int:
    from .._exceptions import HubError
    from ._pin import split_pin
    from ._push import pull

    require("huggingface_hub", extra="hub", feature="openenv pull")
    try:
        repo_id, revision = split_pin(args.repo_id, args.revision)
    except HubError as exc:
        print(f"openenv pull: {exc}", file=sys.stderr)
        return 2
    if _bad_repo_id("pull", repo_id):
        return 2
    try:
        path = pull(repo_id, args.dir, revision=revision, token=args.token)
    except HubError as exc:
        print(f"openenv pull: {exc}", file=sys.stderr)
        return 1
    print(path)
    print("nothing was installed or run; inspect it, then: openenv validate " + str(path), file=sys.stderr)
    return 0


def add_commands(sub: Any) -> None:
    """Register ``push`` and ``pull`` on the CLI's subparsers."""
    p = sub.add_parser("push", help="publish an env folder as a Hugging Face Docker Space")
    p.add_argument("path", help="the env folder (with openenv.yaml)")
    p.add_argument("--repo-id", required=True, help="ORG/NAME of the Space")
    p.add_argument("--private", action="store_true", help="create the Space private")
    p.add_argument("--dry-run", action="store_true", help="list what would be uploaded; upload nothing")
    p.add_argument("--token", help="Hugging Face token (default: HF_TOKEN or the saved login)")
    p.set_defaults(func=_push)

    p = sub.add_parser("pull", help="download a Space's files (nothing is installed or run)")
    p.add_argument("repo_id", help="ORG/NAME of the Space, or ORG/NAME@REVISION")
    p.add_argument("--dir", help="where to put it (default ./NAME)")
    p.add_argument("--revision", help="branch, tag or commit")
    p.add_argument("--token", help="Hugging Face token (default: HF_TOKEN or the saved login)")
    p.set_defaults(func=_pull)
