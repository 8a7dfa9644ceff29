"""CartPole steps/s: served through ``openenv.gym`` vs gymnasium's own vector envs.

Same run, alternating blocks, one server child process (``openenv serve
gym:CartPole-v1``) on 127.0.0.1:

* ``served vector``: ``RemoteVectorEnv(url, N)``: N sessions, one connection, one
  ``batch`` frame per step (msgpack; arrays as bytes);
* ``AsyncVectorEnv``, ``SyncVectorEnv``: gymnasium's, over N in-process ``CartPole-v1``;
* ``served single``: ``RemoteEnv(url)`` (one session) vs one in-process env.

Each block steps for ``--steps`` vector steps with pre-drawn random actions; a figure is
the median over ``--rounds`` of each block's rate, a ratio the median of per-round ratios.

    .venv/bin/python bench/bench_gym.py [--envs 64] [--steps 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

from bench._util import Server, cpu_seconds, descendants, free_port, loadavg, median, stop_all, table
from openenv.gym import RemoteEnv, RemoteVectorEnv

ENV_ID = "CartPole-v1"


class Meter:
    """Wall time and CPU time (this process plus ``pids``: the server, or the
    ``AsyncVectorEnv`` workers) over one block; CPU time is steadier than wall time on
    a busy machine and says what a step costs in all."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids

    def __enter__(self) -> Meter:
        self.cpu0 = time.process_time() + sum(cpu_seconds(p) for p in self.pids)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        self.cpu = time.process_time() + sum(cpu_seconds(p) for p in self.pids) - self.cpu0


def vector_block(env: Any, steps: int, rng: np.random.Generator, pids: list[int]) -> tuple[float, float]:
    """(env steps/s, CPU microseconds per env step) over one block."""
    actions = rng.integers(0, 2, (steps, env.num_envs))
    with Meter(pids) as m:
        for a in actions:
            env.step(a)
    n = steps * env.num_envs
    return n / m.wall, m.cpu / n * 1e6


def single_block(env: Any, steps: int, rng: np.random.Generator, pids: list[int]) -> tuple[float, float]:
    actions = rng.integers(0, 2, steps).tolist()
    with Meter(pids) as m:
        for a in actions:
            _, _, terminated, truncated, _ = env.step(a)
            if terminated or truncated:
                env.reset()
    return steps / m.wall, m.cpu / steps * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--steps", type=int, default=200, help="vector steps per block")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    n = args.envs
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "openenv",
        "serve",
        f"gym:{ENV_ID}",
        "--port",
        str(port),
        "--max-sessions",
        str(n + 8),
    ]
    server = Server("openenv serve gym:CartPole-v1", argv, port).start()
    try:
        server.wait_ready()
        make: Callable[[], gymnasium.Env[Any, Any]] = lambda: gymnasium.make(ENV_ID)  # noqa: E731
        vectors: dict[str, Any] = {
            "served vector (1 connection, batch)": RemoteVectorEnv(server.base, n),
            "AsyncVectorEnv (in-process)": AsyncVectorEnv([make] * n),
            "SyncVectorEnv (in-process)": SyncVectorEnv([make] * n),
        }
        singles: dict[str, Any] = {
            "served single (RemoteEnv)": RemoteEnv(server.base),
            "in-process single": make(),
        }
        for i, env in enumerate([*vectors.values(), *singles.values()]):
            env.reset(seed=i)
        served = [server.pid]
        workers = [
            p for p in descendants(os.getpid()) if p != server.pid and p not in descendants(server.pid)
        ]
        pids = {name: served if name.startswith("served") else [] for name in [*vectors, *singles]}
        pids["AsyncVectorEnv (in-process)"] = workers
        rates: dict[str, list[float]] = {name: [] for name in [*vectors, *singles]}
        cpus: dict[str, list[float]] = {name: [] for name in [*vectors, *singles]}
        rng = np.random.default_rng(0)
        for r in range(args.rounds):
            for name in list(vectors) if r % 2 == 0 else list(reversed(vectors)):
                rate, cpu = vector_block(vectors[name], args.steps, rng, pids[name])
                rates[name].append(rate)
                cpus[name].append(cpu)
            for name in singles if r % 2 == 0 else reversed(list(singles)):
                rate, cpu = single_block(singles[name], args.steps * 4, rng, pids[name])
                rates[name].append(rate)
                cpus[name].append(cpu)
        report(rates, cpus, args, n)
        for env in [*vectors.values(), *singles.values()]:
            env.close()
    finally:
        stop_all()


def report(
    rates: dict[str, list[float]], cpus: dict[str, list[float]], args: argparse.Namespace, n: int
) -> None:
    served, single = "served vector (1 connection, batch)", "served single (RemoteEnv)"

    def ratio(a: str, b: str) -> float:
        return median(x / y for x, y in zip(rates[a], rates[b], strict=True))

    rows = [
        [name, f"{median(v):,.0f}", f"{min(v):,.0f}-{max(v):,.0f}", f"{median(cpus[name]):.1f}"]
        for name, v in rates.items()
    ]
    print(f"CartPole-v1, {n} envs, {args.steps} vector steps x {args.rounds} rounds; load {loadavg()}")
    print(table(["mode", "env steps/s (median)", "range", "CPU us per env step (all processes)"], rows))
    print()
    print(
        table(
            ["ratio (median of per-round ratios)", "x"],
            [
                ["served vector / AsyncVectorEnv", f"{ratio(served, 'AsyncVectorEnv (in-process)'):.2f}"],
                ["served vector / SyncVectorEnv", f"{ratio(served, 'SyncVectorEnv (in-process)'):.2f}"],
                ["served single / in-process single", f"{ratio(single, 'in-process single'):.3f}"],
            ],
        )
    )


if __name__ == "__main__":
    main()
