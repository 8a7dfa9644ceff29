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


async def mcp_rate(url: str, mode: str, calls: int, warmup: int) -> tuple[float, list[float]]:
    """Sequential ``echo`` tool calls per second over one SDK client, and each call's seconds."""
    from mcp.client.client import Client

    async with Client(url, mode=mode) as client:
        args: dict[str, Any] = {"message": "hi"}
        for _ in range(warmup):
            result = await client.call_tool("echo", args)
        sid = (result.structured_content or {}).get("session_id")
        if sid:  # sessionless: keep to one episode, as an agent does
            args["session_id"] = sid
        lat = []
        start = time.perf_counter()
        for _ in range(calls):
            t = time.perf_counter()
            result = await client.call_tool("echo", args)
            lat.append(time.perf_counter() - t)
        elapsed = time.perf_counter() - start
        assert not result.is_error, result
    return calls / elapsed, lat


def ws_rate(base: str, steps: int, warmup: int) -> tuple[float, list[float]]:
    with EnvClient(base, MODELS) as env:
        env.reset()
        action = EchoAction(message="hi")
        for _ in range(warmup):
            env.step(action)
        lat = []
        start = time.perf_counter()
        for _ in range(steps):
            t = time.perf_counter()
            env.step(action)
            lat.append(time.perf_counter() - t)
        return steps / (time.perf_counter() - start), lat


async def run(rounds: int, calls: int, warmup: int) -> dict[str, Any]:
    ours = ours_server(free_port()).start()
    bare = bare_server(free_port()).start()
    ours.wait_ready()
    await wait_http(bare.base)
    probes: dict[str, Callable[[], Awaitable[tuple[float, list[float]]]]] = {
        "ours_sessionless": lambda: mcp_rate(f"{ours.base}/mcp", "auto", calls, warmup),
        "bare_sessionless": lambda: mcp_rate(f"{bare.base}/mcp", "auto", calls, warmup),
        "ours_initialize": lambda: mcp_rate(f"{ours.base}/mcp", "legacy", calls, warmup),
        "bare_initialize": lambda: mcp_rate(f"{bare.base}/mcp", "legacy", calls, warmup),
        "ours_ws_step": lambda: asyncio.to_thread(ws_rate, ours.base, calls, warmup),
    }
    rates: dict[str, list[float]] = {k: [] for k in probes}
    lats: dict[str, list[float]] = {k: [] for k in probes}
    for _ in range(rounds):
        for name, probe in probes.items():
            rate, lat = await probe()
            rates[name].append(rate)
            lats[name].extend(lat)
    return {"load_end": loadavg(), "rates": rates, "latency_us": {k: _quantiles(v) for k, v in lats.items()}}


def _quantiles(xs: list[float]) -> dict[str, float]:
    s = sorted(xs)
    return {q: s[min(len(s) - 1, int(p * len(s)))] * 1e6 for q, p in (("min", 0), ("p10", 0.1), ("p50", 0.5))}


def report(out: dict[str, Any]) -> str:
    """Throughput ratio (median of paired blocks) and latency ratios; on a busy machine the
    minimum and p10 latencies are the figures that other tenants disturb least."""
    rates, lat = out["rates"], out["latency_us"]
    rows = []
    pairs = [
        (f"ours_{e}", f"bare_{e}", f"MCP tools/call, {e}: ours / bare SDK")
        for e in ("sessionless", "initialize")
    ]
    pairs.append(("ours_sessionless", "ours_ws_step", "ours MCP sessionless / ours step over /ws"))
    for ours, base, label in pairs:
        ratios = [o / b for o, b in zip(rates[ours], rates[base], strict=True)]
        lo, lb = lat[ours], lat[base]
        target = "yes" if median(ratios) >= 0.9 else "no"
        rows.append(
            [
                label,
                fmt(median(rates[ours])),
                fmt(median(rates[base])),
                f"{median(ratios):.2f}x",
                spread(ratios),
                f"{lb['min'] / lo['min']:.2f}x",
                f"{lb['p10'] / lo['p10']:.2f}x",
                f"{lo['p50']:,.0f} / {lb['p50']:,.0f}",
                target if "bare" in base else "-",
            ]
        )
    headers = [
        "figure",
        "ours calls/s",
        "baseline calls/s",
        "throughput ratio (median of blocks)",
        "range",
        "min-latency ratio",
        "p10-latency ratio",
        "p50 us ours / baseline",
        ">= 0.9x",
    ]
    return table(headers, rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="write the raw figures as JSON here")
    args = parser.parse_args()
    rounds, calls, warmup = (3, 200, 20) if args.quick else (6, 300, 30)
    try:
        out = asyncio.run(run(rounds, calls, warmup))
    finally:
        stop_all()
    out["machine"] = machine()
    print(f"{HOST} | load at the end {out['load_end']} | {rounds} blocks x {calls} calls per client")
    print(report(out))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
