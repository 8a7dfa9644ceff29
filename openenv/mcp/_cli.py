"""``openenv mcp TARGET``: serve an env over MCP on stdio; argument parsing and output only."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._extras import require


def _mcp(args: argparse.Namespace) -> int:
    require("mcp", extra="mcp", feature="openenv mcp")
    import anyio

    from .._exceptions import EnvNotFound, OpenEnvError
    from . import serve_stdio

    try:
        options = json.loads(args.reset_options) if args.reset_options else None
    except json.JSONDecodeError as exc:
        print(f"openenv mcp: --reset-options is not JSON: {exc}", file=sys.stderr)
        return 2
    if options is not None and not isinstance(options, dict):
        print("openenv mcp: --reset-options must be a JSON object, e.g. '{\"seed\": 1}'", file=sys.stderr)
        return 2
    try:
        anyio.run(lambda: serve_stdio(args.target, image=args.image, reset_options=options))
    except EnvNotFound as exc:
        print(f"openenv mcp: {exc}", file=sys.stderr)
        return 2
    except OpenEnvError as exc:  # no MCP at a URL or image, a container or env reset that failed
        print(f"openenv mcp: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def add_commands(sub: Any) -> None:
    """Register ``mcp`` on the CLI's subparsers."""
    p = sub.add_parser("mcp", help="serve an env as an MCP server over stdio (for agent harnesses)")
    p.add_argument("target", help="a served env URL, an env folder, module:Class, an env name, or an image")
    p.add_argument("--image", action="store_true", help="TARGET is a Docker image: run it while serving")
    p.add_argument("--reset-options", metavar="JSON", help='reset data, e.g. \'{"seed": 1, "max_steps": 5}\'')
    p.set_defaults(func=_mcp)
