"""Server memory per idle open session: VmRSS and Threads at 0 / 256 / 1,000 sessions.

Each measurement starts a fresh server, probes it once (one reset on a throwaway
connection, so lazy imports are done), reads /proc/PID/status, then opens sessions
(each: reset + 1 step, then left idle) and reads it again at each mark, and once
more after every session was closed. KiB/session = (RSS@N - RSS@0) / N.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from _util import (
    RESET_FRAME,
    STEP_FRAME,
    Server,
    fmt,
    free_port,
    ours_server,
    proc_status,
    raw_server,
    table,
    upstream_server,
)

SETTLE_S = 0.5
OPEN_CHUNK = 50


async def _per_connection(kind: str, url: str, marks: list[int], pid: int, deadline: float) -> dict[str, Any]:
    """One connection per session, opened OPEN_CHUNK at a time."""
    if kind == "ours":
        from echo_env import MODELS, EchoAction

        from openenv import AsyncEnvClient

        action = EchoAction(message="hello")

        async def open_one() -> Any:
            env = AsyncEnvClient(url, MODELS, connect_timeout_s=60)
            await env.reset()
            await env.step(action)
            return env
    else:
        from websockets.asyncio.client import connect

        async def open_one() -> Any:
            ws = await connect(url, compression=None, max_size=2**24, open_timeout=60)
            for frame in (RESET_FRAME, STEP_FRAME):
                await ws.send(frame)
                assert json.loads(await ws.recv())["type"] == "observation"
            return ws

    async def closer(s: Any) -> None:
        await s.close()

    return await _grow(open_one, closer, marks, pid, deadline)


async def _grow(
    open_one: Callable[[], Awaitable[Any]],
    closer: Callable[[Any], Awaitable[None]],
    marks: list[int],
    pid: int,
    deadline: float,
) -> dict[str, Any]:
    held: list[Any] = []
    status: dict[str, dict[str, int]] = {}
    await asyncio.sleep(SETTLE_S)
    status["0"] = proc_status(pid)
    try:
        for mark in marks:
            while len(held) < mark and time.monotonic() < deadline:
                k = min(OPEN_CHUNK, mark - len(held))
                held += await asyncio.gather(*(open_one() for _ in range(k)))
            await asyncio.sleep(SETTLE_S)
            status[str(len(held))] = proc_status(pid)
    finally:
        await asyncio.gather(*(closer(s) for s in held), return_exceptions=True)
    await asyncio.sleep(2 * SETTLE_S)
    status["closed"] = proc_status(pid)
    return status


async def _named(url: str, marks: list[int], pid: int, deadline: float) -> dict[str, Any]:
    """Named sessions on ONE connection: reset_batch + step_batch, OPEN_CHUNK names at a time."""
    from echo_env import MODELS, EchoAction

    from openenv import AsyncEnvClient

    action = EchoAction(message="hello")
    env = AsyncEnvClient(url, MODELS)
    await env.connect()
    count = 0

    async def open_chunk(k: int) -> list[str]:
        nonlocal count
        names = [f"s{count + i}" for i in range(k)]
        count += k
        await env.reset_batch(names)
        await env.step_batch(dict.fromkeys(names, action))
        return names

    held: list[str] = []
    status: dict[str, dict[str, int]] = {}
    await asyncio.sleep(SETTLE_S)
    status["0"] = proc_status(pid)
    try:
        for mark in marks:
            while len(held) < mark and time.monotonic() < deadline:
                held += await open_chunk(min(OPEN_CHUNK, mark - len(held)))
            await asyncio.sleep(SETTLE_S)
            status[str(len(held))] = proc_status(pid)
    finally:
        await env.close()
    await asyncio.sleep(2 * SETTLE_S)
    status["closed"] = proc_status(pid)
    return status


def measure(marks: list[int], with_upstream: bool, max_s: float = 180.0) -> list[dict[str, Any]]:
    targets: list[tuple[str, Callable[[int], Server], str]] = [
        (
            "our server, 1 connection per session (AsyncEnvClient)",
            lambda p: ours_server(p, max_sessions=2048),
            "ours",
        ),
        ("our server, named sessions on 1 connection", lambda p: ours_server(p, max_sessions=2048), "named"),
        ("raw websockets server (1 connection per session)", raw_server, "raw"),
    ]
    if with_upstream:
        targets.append(
            (
                "upstream 0.10.0 (1 connection per session)",
                lambda p: upstream_server(p, max(marks) + 64),
                "raw",
            )
        )
    out = []
    for label, make, kind in targets:
        port = free_port()
        srv = make(port).start()
        try:
            srv.wait_ready()
            deadline = time.monotonic() + max_s
            if kind == "named":
                status = asyncio.run(_named(srv.url, marks, srv.pid, deadline))
            else:
                status = asyncio.run(_per_connection(kind, srv.url, marks, srv.pid, deadline))
        finally:
            srv.stop()
        rss = {k: v["VmRSS"] for k, v in status.items()}
        threads = {k: v["Threads"] for k, v in status.items()}
        per = {k: (rss[k] - rss["0"]) / int(k) for k in rss if k not in ("0", "closed") and int(k)}
        print(f"  mem {label}: RSS {rss} threads {threads}", flush=True)
        out.append(
            {"server": label, "rss_kib": rss, "threads": threads, "kib_per_session": per, "status": status}
        )
    return out


def mem_table(out: list[dict[str, Any]], marks: list[int]) -> str:
    rows = []
    for r in out:
        rss, th, per = r["rss_kib"], r["threads"], r["kib_per_session"]
        rows.append(
            [
                r["server"],
                *(fmt(rss.get(str(m))) for m in [0, *marks]),
                fmt(rss.get("closed")),
                *(fmt(per.get(str(m)), 1) for m in marks),
                " / ".join(fmt(th.get(str(m))) for m in [0, *marks, "closed"]),
            ]
        )
    heads = [
        "server",
        *(f"RSS@{m} KiB" for m in [0, *marks]),
        "RSS after close",
        *(f"KiB/session 0->{m}" for m in marks),
        "threads @" + "/".join(map(str, [0, *marks, "closed"])),
    ]
    return table(heads, rows)
