"""MCP tool-call round trips per second: our ``/mcp`` against a bare SDK server, one run.

Three servers on 127.0.0.1, each a child process under uvicorn (uvloop, httptools):

* ours: ``openenv serve echo``; the echo env's one tool ``echo`` at ``/mcp``, and the
  same env's ``step`` over ``/ws`` (sync ``EnvClient``) for comparison;
* bare: the floor, the official SDK's ``MCPServer`` with one trivial tool
  (``echo(message) -> str``) and its own ``streamable_http_app()``.

In alternating blocks (same minute on the machine, so the ratios are fair), one client
calls the tool sequentially with the SDK 2.x ``Client``: sessionless (the 2026-07-28
protocol; ours passes the episode's ``session_id``) and with an ``initialize``
session (``mode="legacy"``). Target: ours >= 0.9x bare.

    .venv/bin/python bench/bench_mcp.py              # about a minute
    .venv/bin/python bench/bench_mcp.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from _util import HOST, Server, fmt, free_port, loadavg, machine, median, ours_server, spread, stop_all, table
from echo_env import MODELS, EchoAction

from openenv import EnvClient

BARE = """
import sys, uvicorn
from mcp.server.mcpserver import MCPServer
srv = MCPServer("bare")
@srv.tool()
def echo(message: str) -> str:
    return message
uvicorn.run(srv.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]),
            loop="uvloop", http="httptools", log_level="warning")
"""


def bare_server(port: int) -> Server:
    return Server("bare-sdk", [sys.executable, "-c", BARE, str(port)], port)


async def wait_http(base: str, timeout_s: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as http:
        while time.monotonic() < deadline:
            try:
                await http.get(f"{base}/mcp", timeout=1.0)
                return
            except httpx.TransportError:
                await asyncio.sleep(0.05)
    raise TimeoutError(f"{base} not up within {timeout_s} s")


async def mcp_rate(url: str, mode: str, calls: int, warmup: int) -> float:
    """Sequential ``echo`` tool calls per second over one SDK client."""
    from mcp.client.client import Client

    async with Client(url, mode=mode) as client:
        args: dict[str, Any] = {"message": "hi"}
        for _ in range(warmup):
            result = await client.call_tool("echo", args)
        sid = (result.structured_content or {}).get("session_id")
        if sid:  # sessionless: keep to one episode, as an agent does
            args["session_id"] = sid
        start = time.perf_counter()
        for _ in range(calls):
            result = await client.call_tool("echo", args)
        elapsed = time.perf_counter() - start
        assert not result.is_error, result
    return calls / elapsed


def ws_rate(base: str, steps: int, warmup: int) -> float:
    with EnvClient(base, MODELS) as env:
        env.reset()
        action = EchoAction(message="hi")
        for _ in range(warmup):
            env.step(action)
        start = time.perf_counter()
        for _ in range(steps):
            env.step(action)
        return steps / (time.perf_counter() - start)


async def run(rounds: int, calls: int, warmup: int) -> dict[str, Any]:
    ours = ours_server(free_port()).start()
    bare = bare_server(free_port()).start()
    ours.wait_ready()
    await wait_http(bare.base)
    probes: dict[str, Callable[[], Awaitable[float]]] = {
        "ours_sessionless": lambda: mcp_rate(f"{ours.base}/mcp", "auto", calls, warmup),
        "bare_sessionless": lambda: mcp_rate(f"{bare.base}/mcp", "auto", calls, warmup),
        "ours_initialize": lambda: mcp_rate(f"{ours.base}/mcp", "legacy", calls, warmup),
        "bare_initialize": lambda: mcp_rate(f"{bare.base}/mcp", "legacy", calls, warmup),
        "ours_ws_step": lambda: asyncio.to_thread(ws_rate, ours.base, calls, warmup),
    }
    rates: dict[str, list[float]] = {k: [] for k in probes}
    for _ in range(rounds):
        for name, probe in probes.items():
            rates[name].append(await probe())
    return {"load": loadavg(), "rates": rates}


def report(out: dict[str, Any]) -> str:
    rates = out["rates"]
    rows = []
    for era in ("sessionless", "initialize"):
        ours, bare = rates[f"ours_{era}"], rates[f"bare_{era}"]
        ratios = [o / b for o, b in zip(ours, bare, strict=True)]
        rows.append([f"MCP tools/call, {era}: ours / bare SDK", fmt(median(ours)), fmt(median(bare)),
                     f"{median(ratios):.2f}x", spread(ratios), "yes" if median(ratios) >= 0.9 else "no"])
    ws = rates["ours_ws_step"]
    ratios = [o / w for o, w in zip(rates["ours_sessionless"], ws, strict=True)]
    rows.append(["ours MCP sessionless / ours step over /ws", fmt(median(rates["ours_sessionless"])),
                 fmt(median(ws)), f"{median(ratios):.2f}x", spread(ratios), "-"])
    return table(["figure", "ours calls/s", "baseline calls/s", "ratio (median of blocks)", "range",
                  ">= 0.9x"], rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="write the raw figures as JSON here")
    args = parser.parse_args()
    rounds, calls, warmup = (3, 200, 20) if args.quick else (8, 500, 50)
    try:
        out = asyncio.run(run(rounds, calls, warmup))
    finally:
        stop_all()
    out["machine"] = machine()
    print(f"{HOST} | load {out['load']} | {rounds} blocks x {calls} calls per client")
    print(report(out))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
