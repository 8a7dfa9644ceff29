"""The ``openenv`` command: thin calls into the library."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _serve(args: argparse.Namespace) -> int:
    from .server import ServerSettings, serve
    from .server._serve import EnvNotFound

    settings = ServerSettings.from_env(
        host=args.host,
        port=args.port,
        workers=args.workers,
        max_sessions=args.max_sessions,
        idle_timeout_s=args.idle_timeout,
        log_level=args.log_level,
    )
    try:
        serve(args.env, settings)
    except EnvNotFound as exc:
        print(f"openenv serve: {exc}", file=sys.stderr)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openenv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="serve an env over HTTP and WebSocket")
    p.add_argument("env", help="module:Class, an env folder, or an installed env's name")
    p.add_argument("--host", help="interface to bind (default 127.0.0.1; OPENENV_HOST)")
    p.add_argument("--port", type=int, help="port (default 8000; OPENENV_PORT)")
    p.add_argument("--workers", type=int, help="server processes (default 1)")
    p.add_argument("--max-sessions", type=int, help="concurrent sessions per process (default 1024)")
    p.add_argument("--idle-timeout", type=float, help="seconds before an idle session is closed; 0 = never")
    p.add_argument("--log-level", help="debug, info, warning (default), error")
    p.set_defaults(func=_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
