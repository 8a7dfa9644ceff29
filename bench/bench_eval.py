"""Harness overhead of ``openenv eval`` per episode: the echo env, a scripted policy,
concurrency 64.

One echo server child process on 127.0.0.1 (``openenv serve echo``), then alternating
blocks in the same run:

* ``bare loop``: the same episodes driven by ``AsyncEnvClient`` directly: 64 workers,
  one connection each, ``reset`` then ``--turns`` steps of the same scripted message;
  nothing recorded (the baseline);
* ``openenv eval``: ``run_eval_async`` with the same policy (``CallablePolicy``) and
  the same concurrency: the whole harness (the Task API probe, a trajectory a line,
  fsync, results, progress off).

The overhead per episode is ``(eval wall - bare wall) / episodes``; a figure is the
median over ``--rounds``, the ratio the median of per-round ratios.

    .venv/bin/python bench/bench_eval.py [--episodes 1000] [--turns 4] [--concurrency 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import free_port, loadavg, median, ours_server, stop_all, table
from openenv.client import AsyncEnvClient
from openenv.eval import EvalConfig, run_eval_async
from openenv.policy import CallablePolicy

MESSAGE = {"message": "hello world"}


def scripted(observation: Any, episode: Any) -> dict[str, str]:
    return MESSAGE


async def bare(url: str, episodes: int, turns: int, concurrency: int) -> float:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(episodes):
        queue.put_nowait(i)

    async def worker() -> None:
        async with AsyncEnvClient(url) as env:
            while not queue.empty():
                seed = queue.get_nowait()
                await env.reset(seed=seed)
                for _ in range(turns):
                    await env.step(MESSAGE)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t0


async def harness(url: str, episodes: int, turns: int, concurrency: int) -> float:
    out = Path(tempfile.mkdtemp(prefix="bench-eval-"))
    try:
        cfg = EvalConfig(
            env=url,
            policy=CallablePolicy(scripted),
            out=out,
            count=episodes,
            max_turns=turns,
            concurrency=concurrency,
        )
        t0 = time.perf_counter()
        results = await run_eval_async(cfg)
        wall = time.perf_counter() - t0
        if results["episodes"] != episodes or results["errors"]:
            raise SystemExit(f"the eval run was not clean: {results['error_kinds']}")
        return wall
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=1000)
    p.add_argument("--turns", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    server = ours_server(free_port()).start()
    try:
        server.wait_ready()
        walls: dict[str, list[float]] = {"bare loop": [], "openenv eval": []}
        for r in range(args.rounds):
            order = ["bare loop", "openenv eval"] if r % 2 == 0 else ["openenv eval", "bare loop"]
            for name in order:
                run = bare if name == "bare loop" else harness
                walls[name].append(asyncio.run(run(server.base, args.episodes, args.turns, args.concurrency)))
        report(walls, args)
    finally:
        stop_all()


def report(walls: dict[str, list[float]], args: argparse.Namespace) -> None:
    n = args.episodes
    bare_w, eval_w = walls["bare loop"], walls["openenv eval"]
    overhead_ms = [1000 * (e - b) / n for e, b in zip(eval_w, bare_w, strict=True)]
    rows = [[name, f"{median(w):.3f}", f"{1000 * median(w) / n:.2f}"] for name, w in walls.items()]
    print(
        f"echo env, {n} episodes of reset + {args.turns} steps, concurrency {args.concurrency}, "
        f"{args.rounds} rounds; load {loadavg()}"
    )
    print(table(["mode", "wall s (median)", "ms per episode"], rows))
    print()
    print(
        table(
            ["figure", "value"],
            [
                ["harness overhead per episode, ms (median)", f"{median(overhead_ms):.2f}"],
                [
                    "eval wall / bare wall (median of per-round ratios)",
                    f"{median(e / b for e, b in zip(eval_w, bare_w, strict=True)):.2f}",
                ],
            ],
        )
    )


if __name__ == "__main__":
    main()
