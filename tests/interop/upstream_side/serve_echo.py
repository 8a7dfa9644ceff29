"""Serve the echo env with *upstream* OpenEnv's own ``create_app`` + uvicorn.

Run with the upstream venv's interpreter (never our own):

    .venv-upstream/bin/python tests/interop/upstream_side/serve_echo.py --port 0 \
        [--max-sessions 4] [--max-seconds 300] [--port-file PATH]

* Binds 127.0.0.1 only.  ``--port 0`` picks a free port.
* Once uvicorn is accepting, prints exactly one JSON line to stdout:
  ``{"event": "listening", "host": "127.0.0.1", "port": N, "pid": P, ...}``
  (and writes the port number to ``--port-file`` if given).
* Concurrency is enabled: ``max_concurrent_envs = --max-sessions`` (default 4;
  upstream's own default would be 1).
* Exits by itself after ``--max-seconds`` (default 300) and on SIGTERM/SIGINT
  (uvicorn's graceful shutdown, with a hard ``os._exit`` if that hangs).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _upstream_guard  # noqa: E402  (must precede any openenv import)

UPSTREAM_VERSION = _upstream_guard.check()

HARD_EXIT_GRACE_S = 8.0


def _parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True, help="0 = pick a free port")
    ap.add_argument("--max-sessions", type=int, default=4)
    ap.add_argument("--max-seconds", type=float, default=300.0)
    ap.add_argument("--port-file", default=None)
    ap.add_argument("--mode", choices=["simulation", "production"], default="simulation")
    ap.add_argument(
        "--ws",
        default="auto",
        help="uvicorn websocket impl (auto = what a plain uvicorn.run() picks)",
    )
    ap.add_argument("--log-level", default="warning")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = _parse_args(argv)

    import uvicorn
    from openenv.core.env_server.http_server import create_app

    from echo_models import EchoAction, EchoEnvironment, EchoObservation

    app = create_app(
        EchoEnvironment,
        EchoAction,
        EchoObservation,
        env_name="echo_env",
        max_concurrent_envs=args.max_sessions,
        mode=args.mode,
    )

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]

    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        ws=args.ws,
        log_level=args.log_level,
        access_log=False,
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)
    deadline = time.monotonic() + args.max_seconds

    def watchdog() -> None:
        announced = False
        exit_seen_at = None
        while True:
            now = time.monotonic()
            if not announced and server.started:
                announced = True
                if args.port_file:
                    tmp = args.port_file + ".tmp"
                    with open(tmp, "w") as fh:
                        fh.write(str(port))
                    os.replace(tmp, args.port_file)
                line = {
                    "event": "listening",
                    "host": "127.0.0.1",
                    "port": port,
                    "pid": os.getpid(),
                    "max_sessions": args.max_sessions,
                    "mode": args.mode,
                    "upstream_version": UPSTREAM_VERSION,
                    "ws_impl": getattr(
                        getattr(config, "ws_protocol_class", None), "__name__", None
                    ),
                }
                sys.stdout.write(json.dumps(line) + "\n")
                sys.stdout.flush()
            if now >= deadline and not server.should_exit:
                sys.stderr.write("serve_echo: --max-seconds reached, shutting down\n")
                server.should_exit = True
            if server.should_exit:
                if exit_seen_at is None:
                    exit_seen_at = now
                elif now - exit_seen_at > HARD_EXIT_GRACE_S:
                    sys.stderr.write("serve_echo: graceful shutdown hung; hard exit\n")
                    os._exit(4)
            time.sleep(0.05)

    threading.Thread(target=watchdog, name="serve-echo-watchdog", daemon=True).start()
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
