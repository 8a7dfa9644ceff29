"""``openenv init`` and ``openenv validate``: argument parsing and output only."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def _init(args: argparse.Namespace) -> int:
    from .._exceptions import InitError
    from ._init import init_env

    try:
        path = init_env(args.name, args.dir)
    except InitError as exc:
        print(f"openenv init: {exc}", file=sys.stderr)
        return 2
    print(path)
    import importlib.util

    # The standard install has no test runner: the hint says so rather than fail later.
    pytest = "" if importlib.util.find_spec("pytest") else "pip install pytest; "
    print(
        f"next: openenv validate {path}  |  {pytest}python -m pytest {path}/tests  |  openenv build {path}",
        file=sys.stderr,
    )
    return 0


def _parse_actions(raw: list[str] | None) -> list[dict[str, Any]]:
    actions = []
    for text in raw or []:
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError(f"--action {text!r} is not a JSON object")
        actions.append(value)
    return actions


def _unknown_env_name(target: str) -> str | None:
    """The line for a target that can only be an installed env's name and is none (with
    the close names), before anything is served; None for any other target."""
    import difflib
    import importlib.metadata
    from pathlib import Path

    if target.startswith(("http://", "https://")) or ":" in target or Path(target).exists():
        return None
    known = sorted({ep.name for ep in importlib.metadata.entry_points(group="openenv.envs")})
    if target in known:
        return None
    close = difflib.get_close_matches(target.replace("-", "_").removesuffix("_env"), known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return (
        f"no environment {target!r}: {hint}give a server's URL, an env folder, module:Class, "
        f"or one of {known or 'no installed envs'}"
    )


def _validate(args: argparse.Namespace) -> int:
    from ._validate import validate

    try:
        actions = _parse_actions(args.action)
    except ValueError as exc:
        print(f"openenv validate: {exc}", file=sys.stderr)
        return 2
    unknown = _unknown_env_name(args.target)
    if unknown:
        print(f"openenv validate: {unknown}", file=sys.stderr)
        return 2
    if args.level or args.output:  # RFC 008's levels and report (docs/validate.md)
        from ._levels_cli import run_levels

        return run_levels(args, actions)
    headers = {"authorization": f"Bearer {args.token}"} if args.token else None
    report = validate(
        args.target,
        actions=actions,
        deterministic=True if args.deterministic else None,
        max_steps=args.max_steps,
        timeout_s=args.timeout,
        headers=headers,
    )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.render())
    return 0 if report.ok else 1


def add_commands(sub: Any) -> None:
    """Register ``init`` and ``validate`` on the CLI's subparsers."""
    p = sub.add_parser("init", help="create a new env package that passes validate, its tests and build")
    p.add_argument("name", help="env name, e.g. my_env (also the Python package name)")
    p.add_argument("--dir", default=".", help="folder to create it in (default: the current one)")
    p.set_defaults(func=_init)

    p = sub.add_parser("validate", help="deep conformance check of a running server or an env folder")
    p.add_argument("target", help="a running server's URL, or an env folder, module:Class or name to serve")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--action", action="append", metavar="JSON", help="action to step with (repeat; default from schema)"
    )
    p.add_argument("--deterministic", action="store_true", help="fail if equal seeds give different replies")
    p.add_argument("--max-steps", type=int, default=5, help="longest episode to run (default 5)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")
    p.add_argument("--token", help="bearer token, e.g. for a private Hugging Face Space")
    p.add_argument("--level", help="RFC 008 report up to static, runtime, semantic or statistical")
    p.add_argument("--output", metavar="FILE", help="write the RFC 008 JSON report here (implies --level)")
    p.add_argument("--skip-build", action="store_true", help="accepted for upstream: --level builds no image")
    p.set_defaults(func=_validate)
