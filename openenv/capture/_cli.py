"""``openenv capture serve``: the capture proxy in front of an OpenAI-compatible backend.

    openenv capture serve --llm-url http://127.0.0.1:8001/v1 --port 8100

It probes the backend once and says the capture level (``tokens`` is trainable). Bad
input (a taken port, an unknown level) is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Sequence

from .._exceptions import MissingExtra, ServeFailed
from .._extras import require
from .._ports import port_problem


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv capture", description="Token-exact capture of agent calls."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="serve the capture proxy (OpenAI, Anthropic and Google dialects)")
    p.add_argument("--llm-url", required=True, help="the backend's OpenAI-compatible base URL (ends in /v1)")
    p.add_argument(
        "--model", default="", help="the model id sent to the backend (default: what the agent names)"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8100)
    p.add_argument(
        "--capture-level",
        choices=("tokens", "logprobs", "text"),
        help="skip the probe: what the backend returns",
    )
    p.add_argument(
        "--admin-key",
        default=os.environ.get("OPENENV_CAPTURE_ADMIN_KEY"),
        help="key the /sessions routes require (env OPENENV_CAPTURE_ADMIN_KEY; set it off loopback)",
    )
    p.add_argument(
        "--api-key",
        default=os.environ.get("OPENENV_CAPTURE_BACKEND_KEY"),
        help="the backend's API key (env OPENENV_CAPTURE_BACKEND_KEY); agents never see it",
    )
    return parser


def _probe(llm_url: str, model: str, api_key: str | None) -> tuple[str | None, str]:
    from ._backend import InferenceClient
    from ._errors import UpstreamError

    async def run() -> str:
        client = InferenceClient(llm_url, served_model=model, api_key=api_key, timeout_s=30)
        try:
            return await client.probe()
        finally:
            await client.aclose()

    try:
        level = asyncio.run(run())
    except UpstreamError as exc:
        return None, f"capture level not known yet ({exc}); probed again at the first POST /sessions"
    note = "trainable" if level == "tokens" else "eval only: no token ids, nothing to train on"
    return level, f"capture level {level} ({note})"


def _serve(args: argparse.Namespace) -> int:
    require("uvicorn", extra="capture", feature="openenv capture serve")
    from ._server import CaptureServer

    if problem := port_problem(args.port):  # a taken port is CaptureServer.start's ServeFailed
        print(f"openenv capture: {problem}", file=sys.stderr)
        return 2

    if not args.admin_key and args.host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(
            f"--host {args.host} serves every session's trace to anyone who can reach it: set --admin-key "
            "(or OPENENV_CAPTURE_ADMIN_KEY)"
        )
    level, said = (args.capture_level, f"capture level {args.capture_level} (as told)")
    if level is None:
        level, said = _probe(args.llm_url, args.model, args.api_key)
    server = CaptureServer(
        llm_url=args.llm_url,
        model=args.model,
        port=args.port,
        host=args.host,
        api_key=args.api_key,
        capture_level=level,
        admin_key=args.admin_key,
    )
    server.start()
    print(
        f"openenv: capture proxy on {server.url} -> {args.llm_url}; {said} (Ctrl-C stops it)",
        file=sys.stderr,
        flush=True,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.stop()
    return 0


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    try:
        return _serve(args)
    except (ServeFailed, MissingExtra, ValueError) as exc:
        print(f"openenv capture: {exc}", file=sys.stderr)
        return 2
