"""``openenv serve``: argument parsing and the one-line errors; ``serve`` does the rest."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from .._extras import require
from .._ports import port_problem


def _sandbox_kwargs_problem(env_kwargs: dict[str, object]) -> str | None:
    """What is wrong with the sandbox arguments that the envs that run commands take
    (``sandbox``, ``session_limits``), checked here so a bad one stops ``serve`` with
    one line, not a traceback from the server's startup; None when nothing is."""
    from .._exceptions import SandboxError
    from ..sandbox import SessionLimits, parse_level

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
    from .._exceptions import EnvKwargsError, EnvNotFound, ServeFailed
    from . import ServerSettings, serve  # the package's names (tests replace serve there)

    if args.port is not None and (problem := port_problem(args.port)):
        print(f"openenv serve: {problem}", file=sys.stderr)
        return 2
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
        from .._exceptions import SandboxError
        from ..sandbox import SessionLimits

        try:
            SessionLimits.parse(args.session_limits)  # refuse a bad spec here, not per session
        except SandboxError as exc:
            print(f"openenv serve: --session-limits: {exc}", file=sys.stderr)
            return 2
        import os  # read by SandboxConfig.from_env in this process and the workers it starts

        os.environ["OPENENV_SANDBOX_LIMITS"] = args.session_limits
    try:
        serve(args.env, settings, exits_after=True)
    except (EnvNotFound, EnvKwargsError) as exc:  # bad input: the target, its arguments
        print(f"openenv serve: {exc}", file=sys.stderr)
        return 2
    except ServeFailed as exc:
        print(f"openenv serve: {exc}", file=sys.stderr)
        return 1
    return 0


def add_commands(sub: Any) -> None:
    """Add ``serve`` to the ``openenv`` parser's subcommands."""
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
