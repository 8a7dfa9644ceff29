"""A session's thread hop: ``concurrent.futures.ThreadPoolExecutor(1)`` (each
``DEDICATED_THREAD`` session's own executor before) against a ``Lane``
(``openenv/server/_threads.py``: started before, reused), one process, alternating
blocks of ``loop.run_in_executor(executor, int)`` on uvloop, as the server's loop calls
an env method. The step latency of every DEDICATED_THREAD env (coding) carries one hop.

    .venv/bin/python bench/bench_threads.py [--blocks 12] [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from concurrent.futures import Executor, ThreadPoolExecutor

from openenv.server._threads import Lanes


async def _block(executor: Executor, calls: int) -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    took = []
    for _ in range(calls):
        start = time.perf_counter()
        await loop.run_in_executor(executor, int)
        took.append(time.perf_counter() - start)
    took.sort()
    return took[len(took) // 2], took[int(len(took) * 0.99)]


async def _main(blocks: int, calls: int) -> None:
    kinds: dict[str, Executor] = {
        "ThreadPoolExecutor(1)": ThreadPoolExecutor(1),
        "Lane": Lanes("bench", 1).take(),
    }
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in kinds}
    for _ in range(blocks):
        for name, executor in kinds.items():
            seen[name].append(await _block(executor, calls))
    base = statistics.median(p50 for p50, _ in seen["ThreadPoolExecutor(1)"])
    for name, runs in seen.items():
        p50 = statistics.median(p for p, _ in runs)
        p99 = statistics.median(p for _, p in runs)
        print(f"{name:22s} hop p50 {p50 * 1e6:6.1f} us ({p50 / base:.2f}x), p99 {p99 * 1e6:6.1f} us")
    for executor in kinds.values():
        executor.shutdown(wait=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=12)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    try:
        import uvloop
    except ImportError:
        asyncio.run(_main(args.blocks, args.calls))
    else:
        uvloop.run(_main(args.blocks, args.calls))


if __name__ == "__main__":
    main()
