"""MCP tool-call round trips per second: our ``/mcp`` against a bare SDK server, one run.

Three servers on 127.0.0.1, each a child process under uvicorn (uvloop, httptools):

* ours: ``openenv serve echo``; the echo env's one tool ``echo`` at ``/mcp``, and the
  same env's ``step`` over ``/ws`` (``AsyncEnvClient``) for comparison;
* bare: the floor, the official SDK's ``MCPServer`` with one trivial tool
  (``echo(message) -> str``) and its own ``streamable_http_app()``.

Sequential calls with the SDK 2.x ``Client``, sessionless (the 2026-07-28 protocol;
ours passes the episode's ``session_id``) and with an ``initialize`` session
(``mode="legacy"``), **interleaved call by call** (ours, bare, ours, bare, ...) so both
see the same moments of the machine: on a busy 2-core VM, blocks of calls measured one
after the other differ more from each other than the servers do. A rate is calls over
the sum of their own latencies. Target: ours >= 0.9x bare.

    .venv/bin/python bench/bench_mcp.py              # about a minute
    .venv/bin/python bench/bench_mcp.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from _util import HOST, Server, fmt, free_port, loadavg, machine, median, ours_server, spread, stop_all, table
from echo_env import MODELS, EchoAction

from openenv import AsyncEnvClient

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


async def _mcp_caller(stack: contextlib.AsyncExitStack, url: str, mode: str) -> Callable[[], Awaitable[Any]]:
    """One SDK client; returns a function making one ``echo`` tool call (in one episode)."""
    from mcp.client.client import Client

    client = await stack.enter_async_context(Client(url, mode=mode))
    args: dict[str, Any] = {"message": "hi"}
    first = await client.call_tool("echo", args)
    sid = (first.structured_content or {}).get("session_id")
    if sid:  # sessionless: keep to one episode, as an agent does
        args["session_id"] = sid

    async def call() -> Any:
        result = await client.call_tool("echo", args)
        assert not result.is_error, result
        return result

    return call


async def _ws_caller(stack: contextlib.AsyncExitStack, base: str) -> Callable[[], Awaitable[Any]]:
    env = await stack.enter_async_context(AsyncEnvClient(base, MODELS))
    await env.reset()
    action = EchoAction(message="hi")
    return lambda: env.step(action)


async def interleaved(
    a: Callable[[], Awaitable[Any]], b: Callable[[], Awaitable[Any]], calls: int, warmup: int
) -> tuple[list[float], list[float]]:
    """Alternate single calls of ``a`` and ``b`` (each call times only itself), so both see
    the same moments of a busy machine."""
    for _ in range(warmup):
        await a()
        await b()
    la, lb = [], []
    for _ in range(calls):
        t = time.perf_counter()
        await a()
        la.append(time.perf_counter() - t)
        t = time.perf_counter()
        await b()
        lb.append(time.perf_counter() - t)
    return la, lb


async def run(rounds: int, calls: int, warmup: int) -> dict[str, Any]:
    ours = ours_server(free_port()).start()
    bare = bare_server(free_port()).start()
    ours.wait_ready()
    await wait_http(bare.base)
    names = ["ours_sessionless", "bare_sessionless", "ours_initialize", "bare_initialize", "ours_ws_step"]
    rates: dict[str, list[float]] = {k: [] for k in [*names, "ours_sessionless_vs_ws"]}
    lats: dict[str, list[float]] = {k: [] for k in rates}
    async with contextlib.AsyncExitStack() as stack:
        callers = {
            "ours_sessionless": await _mcp_caller(stack, f"{ours.base}/mcp", "auto"),
            "bare_sessionless": await _mcp_caller(stack, f"{bare.base}/mcp", "auto"),
            "ours_initialize": await _mcp_caller(stack, f"{ours.base}/mcp", "legacy"),
            "bare_initialize": await _mcp_caller(stack, f"{bare.base}/mcp", "legacy"),
            "ours_ws_step": await _ws_caller(stack, ours.base),
        }
        pairs = [
            ("ours_sessionless", "bare_sessionless"),
            ("ours_initialize", "bare_initialize"),
            ("ours_sessionless_vs_ws", "ours_ws_step"),
        ]
        for _ in range(rounds):
            for a, b in pairs:
                la, lb = await interleaved(callers[a.removesuffix("_vs_ws")], callers[b], calls, warmup)
                for name, lat in ((a, la), (b, lb)):
                    rates[name].append(len(lat) / sum(lat))
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
    pairs.append(("ours_sessionless_vs_ws", "ours_ws_step", "ours MCP sessionless / ours step over /ws"))
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
