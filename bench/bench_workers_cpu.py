"""``--workers 2`` vs ``--workers 1`` when the server is the bottleneck.

Serves ``bench._busy_env:BusyEnv`` (each step burns ``--busy-us`` of CPU) with 1 and
with 2 worker processes, and drives N sessions (one connection each) from one asyncio
client process, in alternating blocks; the gain is the median of per-round ratios.

    .venv/bin/python bench/bench_workers_cpu.py [--busy-us 1000] [--sessions 64] [--rounds 6]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import (
    HOST,
    ROOT,
    Server,
    cpu_seconds,
    descendants,
    free_port,
    loadavg,
    median,
    stop_all,
    table,
)

MAX_BLOCK_S = 60.0


def busy_server(workers: int, busy_us: float) -> Server:
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "openenv",
        "serve",
        "bench._busy_env:BusyEnv",
        "--host",
        HOST,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--max-sessions",
        "2048",
    ]
    env = {"PYTHONPATH": str(ROOT), "OPENENV_BENCH_BUSY_US": str(busy_us), "OPENENV_LOG_LEVEL": "warning"}
    return Server(f"busy-w{workers}", argv, port, env=env)


async def block(base: str, sessions: int, steps: int) -> tuple[float, int]:
    from echo_env import MODELS, EchoAction

    from openenv import AsyncEnvClient

    clients = [AsyncEnvClient(base, MODELS) for _ in range(sessions)]
    await asyncio.gather(*(c.reset() for c in clients))
    action = EchoAction(message="hello")
    deadline = time.perf_counter() + MAX_BLOCK_S

    async def loop(c: Any) -> int:
        n = 0
        while n < steps and time.perf_counter() < deadline:
            await c.step(action)
            n += 1
        return n

    t0 = time.perf_counter()
    done = sum(await asyncio.gather(*(loop(c) for c in clients)))
    took = time.perf_counter() - t0
    await asyncio.gather(*(c.close() for c in clients))
    return done / took, done


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--busy-us", type=float, default=1000.0)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20, help="steps per session per block")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    servers = {w: busy_server(w, args.busy_us).start() for w in (1, 2)}
    try:
        for s in servers.values():
            s.wait_ready()
        rates: dict[int, list[float]] = {1: [], 2: []}
        cpu: dict[int, list[float]] = {1: [], 2: []}
        for r in range(args.rounds):
            for w in (1, 2) if r % 2 == 0 else (2, 1):
                pids = [servers[w].pid, *descendants(servers[w].pid)]
                c0 = sum(cpu_seconds(p) for p in pids)
                rate, done = asyncio.run(block(servers[w].base, args.sessions, args.steps))
                c1 = sum(cpu_seconds(p) for p in pids)
                rates[w].append(rate)
                cpu[w].append((c1 - c0) / done * 1e6)
        gains = [b / a for a, b in zip(rates[1], rates[2], strict=True)]
        rows = [
            [
                f"--workers {w}",
                f"{median(rates[w]):,.0f}",
                f"{median(cpu[w]):,.0f}",
                "1.00" if w == 1 else f"{median(gains):.2f}",
                "-" if w == 1 else f"{min(gains):.2f}-{max(gains):.2f}",
            ]
            for w in (1, 2)
        ]
        print(
            f"BusyEnv {args.busy_us:.0f} us CPU/step, {args.sessions} sessions (1 connection each), "
            f"1 asyncio client process, {args.rounds} rounds; {os.cpu_count()} CPUs, load {loadavg()}"
        )
        print(
            table(["server", "steps/s", "server CPU us/step", "gain vs w1 (paired)", "per-round range"], rows)
        )
    finally:
        stop_all()


if __name__ == "__main__":
    main()
