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


def _run(args: argparse.Namespace) -> int:
    import signal
    import time

    from ._exceptions import ProviderError
    from .containers import DockerProvider

    env = dict(item.split("=", 1) for item in args.env or [])
    # A detached container outlives this process: no host:pid owner, so `openenv gc`
    # does not take it for a crashed client's orphan (`openenv gc --all` removes it).
    labels = {"openenv.owner": "detached"} if args.detach else None
    provider = DockerProvider(
        args.image,
        env=env,
        cpus=args.cpus,
        memory=args.memory,
        start_timeout_s=args.start_timeout,
        labels=labels,
    )
    try:
        replica = provider.start()
    except ProviderError as exc:
        print(f"openenv run: {exc}", file=sys.stderr)
        return 1
    print(replica.base_url, flush=True)
    if args.detach:
        replica.detach()  # otherwise the atexit hook stops it as this process exits
        return 0
    print(f"serving {args.image} (container {replica.id[:12]}); Ctrl-C stops it", file=sys.stderr)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while replica.alive():
            time.sleep(1.0)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        replica.stop()
    return 0


def _build(args: argparse.Namespace) -> int:
    import os

    from ._exceptions import ProviderError
    from .containers import DEFAULT_BASE_IMAGE, build_env_image

    base = args.base_image or os.environ.get("OPENENV_BASE_IMAGE") or DEFAULT_BASE_IMAGE
    try:
        tag = build_env_image(
            args.env,
            tag=args.tag,
            base_image=base,
            rebuild_base=args.rebuild_base,
            no_cache=args.no_cache,
            progress=lambda line: print(line, file=sys.stderr),
        )
    except ProviderError as exc:
        print(f"openenv build: {exc}", file=sys.stderr)
        return 1
    print(tag)
    return 0


def _gc(args: argparse.Namespace) -> int:
    from ._exceptions import ProviderError
    from .containers import gc

    try:
        removed = gc(all_owners=args.all)
    except ProviderError as exc:
        print(f"openenv gc: {exc}", file=sys.stderr)
        return 1
    for name in removed:
        print(f"removed {name}")
    print(f"{len(removed)} container(s) removed", file=sys.stderr)
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

    p = sub.add_parser("build", help="build the Docker image of an env folder (no network in the build)")
    p.add_argument("env", help="the env folder (with pyproject.toml and Dockerfile)")
    p.add_argument("-t", "--tag", help="image tag (default openenv-<name>)")
    p.add_argument(
        "--base-image", help="python image to build on (default python:3.11-slim; OPENENV_BASE_IMAGE)"
    )
    p.add_argument("--rebuild-base", action="store_true", help="rebuild the shared base image")
    p.add_argument("--no-cache", action="store_true", help="do not use Docker's build cache")
    p.set_defaults(func=_build)

    p = sub.add_parser("run", help="run an env image as a container and print its URL")
    p.add_argument("image")
    p.add_argument("-e", "--env", action="append", metavar="KEY=VALUE", help="server environment variable")
    p.add_argument("--cpus", type=float, help="CPU limit, e.g. 1.5")
    p.add_argument("--memory", help="memory limit, e.g. 512m")
    p.add_argument("--start-timeout", type=float, default=60.0, help="seconds to wait for /health")
    p.add_argument("-d", "--detach", action="store_true", help="print the URL and leave it running")
    p.set_defaults(func=_run)

    p = sub.add_parser("gc", help="remove env containers left behind by crashed clients")
    p.add_argument("--all", action="store_true", help="remove every openenv-managed container")
    p.set_defaults(func=_gc)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
