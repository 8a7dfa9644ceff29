"""The ``openenv`` command: thin calls into the library."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace

from ._extras import MissingExtra, require


def _sandbox_kwargs_problem(env_kwargs: dict[str, object]) -> str | None:
    """What is wrong with the sandbox arguments that the envs that run commands take
    (``sandbox``, ``session_limits``), checked here so a bad one stops ``serve`` with
    one line, not a traceback from the server's startup; None when nothing is."""
    from ._exceptions import SandboxError
    from .sandbox import SessionLimits, parse_level

    try:
        if env_kwargs.get("sandbox") is not None:
            parse_level(env_kwargs["sandbox"])
        if env_kwargs.get("session_limits") is not None:
            SessionLimits.parse(str(env_kwargs["session_limits"]))
    except SandboxError as exc:
        return str(exc)
    return None


def _serve(args: argparse.Namespace) -> int:
    require("starlette", extra="server", feature="openenv serve")
    require("uvicorn", extra="server", feature="openenv serve")
    from ._exceptions import ServeFailed
    from .server import ServerSettings, serve
    from .server._serve import EnvNotFound

    env_kwargs = None
    if args.env_kwargs is not None:
        import json

        try:
            env_kwargs = json.loads(args.env_kwargs)
        except ValueError as exc:
            print(f"openenv serve: --env-kwargs is not valid JSON: {exc}", file=sys.stderr)
            return 2
        if not isinstance(env_kwargs, dict):
            print("openenv serve: --env-kwargs must be a JSON object, e.g. '{\"size\": 3}'", file=sys.stderr)
            return 2
        problem = _sandbox_kwargs_problem(env_kwargs)
        if problem:
            print(f"openenv serve: --env-kwargs: {problem}", file=sys.stderr)
            return 2
    try:
        settings = ServerSettings.from_env(
            host=args.host,
            port=args.port,
            workers=args.workers,
            max_sessions=args.max_sessions,
            max_sessions_per_client=args.max_sessions_per_client,
            auth_token=args.auth_token,
            allowed_hosts=args.allowed_hosts,
            allowed_origins=args.allowed_origins,
            forwarded_allow_ips=args.forwarded_allow_ips,
            idle_timeout_s=args.idle_timeout,
            call_timeout_s=args.call_timeout,
            log_level=args.log_level,
            web=False if args.no_web else None,
            env_kwargs=env_kwargs,
        )
    except ValueError as exc:
        print(f"openenv serve: {exc}", file=sys.stderr)
        return 2
    if args.sandbox:  # the `sandbox` argument of envs that run commands, passed like any other
        settings = replace(settings, env_kwargs={**settings.env_kwargs, "sandbox": args.sandbox})
    if args.session_limits is not None:
        from ._exceptions import SandboxError
        from .sandbox import SessionLimits

        try:
            SessionLimits.parse(args.session_limits)  # refuse a bad spec here, not per session
        except SandboxError as exc:
            print(f"openenv serve: --session-limits: {exc}", file=sys.stderr)
            return 2
        import os  # read by SandboxConfig.from_env in this process and the workers it starts

        os.environ["OPENENV_SANDBOX_LIMITS"] = args.session_limits
    try:
        serve(args.env, settings)
    except EnvNotFound as exc:
        print(f"openenv serve: {exc}", file=sys.stderr)
        return 2
    except ServeFailed as exc:
        print(f"openenv serve: {exc}", file=sys.stderr)
        return 1
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
    name = replica.container.name
    print(f"{name} {replica.base_url}", flush=True)
    if args.detach:
        replica.detach()  # otherwise the atexit hook stops it as this process exits
        print(f"container {name} left running; `openenv stop {name}` stops it", file=sys.stderr)
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


def _ps(args: argparse.Namespace) -> int:
    from ._exceptions import ProviderError
    from .containers import containers

    try:
        rows = containers()
    except ProviderError as exc:
        print(f"openenv ps: {exc}", file=sys.stderr)
        return 1
    table = [("NAME", "IMAGE", "URL", "STATUS", "OWNER")]
    table += [(c.name, c.image, c.url or "-", c.status, c.owner or "-") for c in rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[4])
    return 0


def _stop(args: argparse.Namespace) -> int:
    from ._exceptions import ProviderError
    from .containers import stop_container

    try:
        stop_container(args.name, timeout_s=args.timeout)
    except ProviderError as exc:
        print(f"openenv stop: {exc}", file=sys.stderr)
        return 1
    print(f"stopped {args.name}")
    return 0


def _mcp(args: argparse.Namespace) -> int:
    import json

    require("mcp", extra="mcp", feature="openenv mcp")
    import anyio

    from ._exceptions import OpenEnvError
    from .mcp import serve_stdio
    from .server._serve import EnvNotFound

    try:
        options = json.loads(args.reset_options) if args.reset_options else None
    except json.JSONDecodeError as exc:
        print(f"openenv mcp: --reset-options is not JSON: {exc}", file=sys.stderr)
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


def _train(argv: list[str]) -> int:
    try:
        from .train._cli import main as train_main  # needs the 'train' extra (torch)
    except MissingExtra as exc:
        print(f"openenv train: {exc}", file=sys.stderr)
        return 2
    return train_main(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openenv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="serve an env over HTTP and WebSocket")
    p.add_argument("env", help="module:Class, an env folder, or an installed env's name")
    p.add_argument("--host", help="interface to bind (default 127.0.0.1; OPENENV_HOST)")
    p.add_argument("--port", type=int, help="port (default 8000; OPENENV_PORT)")
    p.add_argument("--workers", type=int, help="server processes (default 1)")
    p.add_argument("--max-sessions", type=int, help="concurrent sessions per process (default 1024)")
    p.add_argument(
        "--max-sessions-per-client",
        type=int,
        metavar="N",
        help="sessions one client address may hold per process (default -1: three quarters "
        "of --max-sessions, a quarter kept for others; 0: no quota)",
    )
    p.add_argument(
        "--auth-token",
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on HTTP, WebSocket and MCP "
        "(OPENENV_AUTH_TOKEN keeps it out of the process list; default: none)",
    )
    p.add_argument(
        "--allowed-origins",
        metavar="LIST",
        help="comma-separated origins (http://host:port) whose web pages may use the server "
        "besides its own; '*': any (OPENENV_ALLOWED_ORIGINS; default: none)",
    )
    p.add_argument(
        "--allowed-hosts",
        metavar="LIST",
        help="comma-separated Host names served besides loopback names and addresses; '*': any "
        "(OPENENV_ALLOWED_HOSTS; default: those only on a loopback bind, any otherwise)",
    )
    p.add_argument(
        "--forwarded-allow-ips",
        metavar="LIST",
        help="addresses of trusted proxies whose X-Forwarded-For names the client; '*': any "
        "(OPENENV_FORWARDED_ALLOW_IPS; default: none)",
    )
    p.add_argument("--idle-timeout", type=float, help="seconds before an idle session is closed; 0 = never")
    p.add_argument("--log-level", help="debug, info, warning (default), error")
    p.add_argument("--no-web", action="store_true", help="do not serve the web playground at /web")
    p.add_argument(
        "--env-kwargs",
        metavar="JSON",
        help="constructor arguments of each env, a JSON object (OPENENV_ENV_KWARGS)",
    )
    p.add_argument(
        "--call-timeout", type=float, help="deadline in seconds of each env call (default 300; 0 = none)"
    )
    p.add_argument(
        "--sandbox",
        choices=["strict", "auto", "none"],
        help="containment of envs that run commands, given as their `sandbox` argument (as in "
        "--env-kwargs; default OPENENV_SANDBOX, else auto; strict refuses to start without bubblewrap)",
    )
    p.add_argument(
        "--session-limits",
        metavar="SPEC",
        help="kernel limits on each session's process tree, e.g. 'memory=2G,cpus=1,pids=512,disk=1G' "
        "(any subset; 'off' for none; sets OPENENV_SANDBOX_LIMITS; see docs/sandbox.md)",
    )
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
    p.add_argument(
        "-d", "--detach", action="store_true", help="print the container name and URL and leave it running"
    )
    p.set_defaults(func=_run)

    p = sub.add_parser("ps", help="list the project's env containers: name, image, URL, status, owner")
    p.set_defaults(func=_ps)

    p = sub.add_parser("stop", help="stop and remove one env container (see `openenv ps`)")
    p.add_argument("name", help="the container's name or ID")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds before the stop becomes a kill")
    p.set_defaults(func=_stop)

    p = sub.add_parser("mcp", help="serve an env as an MCP server over stdio (for agent harnesses)")
    p.add_argument("target", help="a served env URL, an env folder, module:Class, an env name, or an image")
    p.add_argument("--image", action="store_true", help="TARGET is a Docker image: run it while serving")
    p.add_argument("--reset-options", metavar="JSON", help='reset data, e.g. \'{"seed": 1, "max_steps": 5}\'')
    p.set_defaults(func=_mcp)

    from .authoring._cli import add_commands as add_authoring_commands
    from .hub._cli import add_commands as add_hub_commands
    from .k8s._cli import add_commands as add_k8s_commands

    add_authoring_commands(sub)  # init, validate
    add_hub_commands(sub)  # push, pull
    add_k8s_commands(sub)  # k8s

    # `openenv train ...` is parsed by openenv.train._cli (see main); listed here for --help.
    sub.add_parser("train", help="train a policy with GRPO against text envs (openenv train --help)")
    # `openenv eval ...` / `openenv policy ...`: parsed by openenv.eval._cli / openenv.policy._cli (see main).
    sub.add_parser("eval", help="evaluate a policy on an env: pass@k, trajectories, report (openenv eval --help)")
    sub.add_parser("policy", help="serve a local checkpoint as an OpenAI-compatible endpoint (openenv policy --help)")

    p = sub.add_parser("gc", help="remove env containers left behind by crashed clients")
    p.add_argument("--all", action="store_true", help="remove every openenv-managed container")
    p.set_defaults(func=_gc)
    return parser


def _import_from_cwd() -> None:
    """Targets such as ``mymodule:MyEnv`` are found in the current directory, as with
    ``python -m``: a console script's ``sys.path`` starts at its own bin folder instead."""
    import os

    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)


def main(argv: Sequence[str] | None = None) -> int:
    rest = list(sys.argv[1:] if argv is None else argv)
    if rest[:1] in (["serve"], ["mcp"], ["validate"], ["eval"]):  # the commands that import a target
        _import_from_cwd()
    if rest[:1] == ["train"]:
        return _train(rest[1:])
    if rest[:1] == ["eval"]:
        from .eval._cli import main as eval_main

        return eval_main(rest[1:])
    if rest[:1] == ["policy"]:
        from .policy._cli import main as policy_main

        return policy_main(rest[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except MissingExtra as exc:  # one line naming the extra, never a traceback
        print(f"openenv {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
