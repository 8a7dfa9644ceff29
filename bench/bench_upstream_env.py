"""An env written for upstream OpenEnv, served by upstream 0.10.0 and by ours: steps/s.

The same files (``bench/upstream_env/bench_counter_env``: ``server/app.py`` calls
``openenv.core.env_server.http_server.create_app``) are served three ways, each in its
own child process on 127.0.0.1:

* ``upstream``: ``python -m uvicorn bench_counter_env.server.app:app`` under
  ``.venv-upstream`` (openenv 0.10.0);
* ``ours uvicorn``: the same command under this venv (our ``openenv.core`` adapters);
* ``ours serve``: ``openenv serve bench/upstream_env/bench_counter_env``.

One client for all, upstream's frames (``reset`` then ``step``): sequential steps on
one connection, and 64 sessions (one connection each, connected and reset before the
clock starts) stepping at once. Rounds alternate the servers; a figure is the median
over rounds, a ratio the median of per-round ratios to upstream in the same round.

``--client websockets`` (the default) is the ``websockets`` library's asyncio client;
``--client raw`` is a minimal one written here (an HTTP upgrade, then fixed masked
text frames out and plain frames in, over asyncio streams), whose own cost per step is
a smaller share of each step, so the ratio shows more of the servers' difference.
``--client-loop uvloop`` runs the client on uvloop (the servers pick their own loop:
upstream's uvicorn has no uvloop in its venv, ours does), for the same reason.

    .venv/bin/python bench/bench_upstream_env.py [--steps 2000] [--sessions 64] [--conc-steps 50] [--rounds 3]
        [--client websockets|raw] [--client-loop asyncio|uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import (
    ROOT,
    UPSTREAM_PY,
    Server,
    free_port,
    loadavg,
    median,
    stop_all,
    table,
    upstream_available,
)

ENV_DIR = ROOT / "bench" / "upstream_env"
APP = "bench_counter_env.server.app:app"
STEP = json.dumps({"type": "step", "data": {"add": 1}})
RESET = json.dumps({"type": "reset", "data": {}})


def servers() -> dict[str, Server]:
    def uvicorn(python: str, name: str) -> Server:
        port = free_port()
        argv = [
            python,
            "-m",
            "uvicorn",
            APP,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
        return Server(name, argv, port, cwd=ENV_DIR, env={"PYTHONPATH": str(ENV_DIR)})

    port = free_port()
    serve = [
        sys.executable,
        "-m",
        "openenv",
        "serve",
        str(ENV_DIR / "bench_counter_env"),
        "--port",
        str(port),
    ]
    return {
        "upstream": uvicorn(str(UPSTREAM_PY), "upstream"),
        "ours uvicorn": uvicorn(sys.executable, "ours uvicorn"),
        "ours serve": Server("ours serve", serve, port, env={"OPENENV_LOG_LEVEL": "warning"}),
    }


async def _session(url: str, steps: int, opened: asyncio.Queue[None], go: asyncio.Event) -> int:
    from websockets.asyncio.client import connect

    async with connect(url, compression=None, max_size=None) as ws:
        await ws.send(RESET)
        json.loads(await ws.recv())
        opened.put_nowait(None)
        await go.wait()
        for _ in range(steps):
            await ws.send(STEP)
            reply = json.loads(await ws.recv())
            if reply.get("type") != "observation":
                raise RuntimeError(f"step answered {reply}")
    return steps


def _frame(text: str) -> bytes:
    """A client text frame: FIN, masked with the all-zero key (so the payload is as is)."""
    payload = text.encode()
    assert len(payload) < 126
    return bytes([0x81, 0x80 | len(payload)]) + b"\0\0\0\0" + payload


RAW_STEP, RAW_RESET = _frame(STEP), _frame(RESET)
RAW_PONG = bytes([0x8A, 0x80]) + b"\0\0\0\0"


class RawWebSocket:
    """Just enough of a WebSocket client for this benchmark (RFC 6455, text frames)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, url: str) -> RawWebSocket:
        host_port, _, path = url.removeprefix("ws://").partition("/")
        host, _, port = host_port.partition(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(f"no WebSocket upgrade: {head[:200]!r}")
        return cls(reader, writer)

    async def send(self, frame: bytes) -> None:
        self.writer.write(frame)

    async def recv(self) -> bytes:
        while True:
            first, second = await self.reader.readexactly(2)
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", await self.reader.readexactly(8))
            payload = await self.reader.readexactly(size)
            opcode = first & 0x0F
            if opcode == 0x9:  # ping
                self.writer.write(RAW_PONG)
                continue
            if opcode == 0x8:
                raise RuntimeError(f"the server closed the connection: {payload[2:]!r}")
            if not first & 0x80:
                raise RuntimeError("fragmented frames are not expected here")
            return payload

    async def close(self) -> None:
        self.writer.write(bytes([0x88, 0x82]) + b"\0\0\0\0" + struct.pack("!H", 1000))
        self.writer.close()
        await self.writer.wait_closed()


async def _session_raw(url: str, steps: int, opened: asyncio.Queue[None], go: asyncio.Event) -> int:
    ws = await RawWebSocket.connect(url)
    try:
        await ws.send(RAW_RESET)
        json.loads(await ws.recv())
        opened.put_nowait(None)
        await go.wait()
        for _ in range(steps):
            await ws.send(RAW_STEP)
            reply = json.loads(await ws.recv())
            if reply.get("type") != "observation":
                raise RuntimeError(f"step answered {reply}")
    finally:
        await ws.close()
    return steps


async def _rate(url: str, sessions: int, steps: int, client: str = "websockets") -> float:
    """Steps/s of ``sessions`` sessions stepping at once: every session is connected and
    reset first; the clock runs from the first step to the last reply."""
    opened: asyncio.Queue[None] = asyncio.Queue()
    go = asyncio.Event()
    session = _session_raw if client == "raw" else _session
    tasks = [asyncio.create_task(session(url, steps, opened, go)) for _ in range(sessions)]
    for _ in range(sessions):
        await asyncio.wait_for(opened.get(), timeout=60)
    t0 = time.perf_counter()
    go.set()
    done = await asyncio.gather(*tasks)
    return sum(done) / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000, help="sequential steps per round")
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--conc-steps", type=int, default=50, help="steps per session at --sessions")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--client", choices=["websockets", "raw"], default="websockets")
    ap.add_argument(
        "--client-loop",
        choices=["asyncio", "uvloop"],
        default="asyncio",
        help="the client's event loop (the servers pick their own)",
    )
    args = ap.parse_args()
    why = upstream_available()
    if why:
        print(f"bench_upstream_env: {why}", file=sys.stderr)
        return 2
    procs = servers()
    rates: dict[str, dict[str, list[float]]] = {n: {"seq": [], "conc": []} for n in procs}
    try:
        for proc in procs.values():
            proc.start()
        for proc in procs.values():
            proc.wait_ready()
        per_session = max(1, args.conc_steps)
        loop_factory = None
        if args.client_loop == "uvloop":
            import uvloop

            loop_factory = uvloop.new_event_loop
        for _ in range(args.rounds):
            for name, proc in procs.items():
                with asyncio.Runner(loop_factory=loop_factory) as runner:
                    rates[name]["seq"].append(runner.run(_rate(proc.url, 1, args.steps, args.client)))
                    conc = _rate(proc.url, args.sessions, per_session, args.client)
                    rates[name]["conc"].append(runner.run(conc))
    finally:
        stop_all()
    rows = []
    for name in procs:
        row: list[object] = [name]
        for kind in ("seq", "conc"):
            ratios = [o / u for o, u in zip(rates[name][kind], rates["upstream"][kind], strict=True)]
            row += [f"{median(rates[name][kind]):.0f}", f"{median(ratios):.2f}x"]
        rows.append(row)
    print(
        f"load {loadavg()}; {args.rounds} rounds; {args.steps} sequential steps; "
        f"{args.sessions} sessions x {args.conc_steps} steps; client {args.client} on {args.client_loop}"
    )
    print(
        table(
            ["server", "seq steps/s", "vs upstream", f"{args.sessions} sessions steps/s", "vs upstream"], rows
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
