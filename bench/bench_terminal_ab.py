"""Terminal env step latency, this tree against another (``--old``), in the same run.

Blocks alternate between the two trees (a fresh child process each, with the tree first
on ``PYTHONPATH``): each block starts ``TerminalEnv`` at the level in process, resets a
free shell, warms up, and times ``steps`` steps of ``echo hi``; then the same through
``openenv serve terminal`` started from the tree, with the sync ``EnvClient``. Reported per level: the
median of each tree's block medians, and new/old (also of the quietest block of each:
on a loaded host block medians swing 5-10x). Make the old tree with
``git archive REV | tar -x -C DIR``.

    .venv/bin/python bench/bench_terminal_ab.py --old /tmp/old_tree          # about a minute
    .venv/bin/python bench/bench_terminal_ab.py --old /tmp/old_tree --blocks 4 --steps 100
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _util import machine

HERE = Path(__file__).resolve().parents[1]

CHILD = """
import asyncio, json, sys, time
from terminal_env import RunAction, TerminalEnv

async def main(level, steps):
    env = TerminalEnv(sandbox=level, pool_size=0)
    await env.reset(options={"free_shell": True})
    try:
        for _ in range(20):
            await env.step(RunAction(command="echo hi"))
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            obs = await env.step(RunAction(command="echo hi"))
            times.append(time.perf_counter() - t0)
            assert obs.output == "hi\\n", obs.output
    finally:
        await env.close()
    print(json.dumps(times))

def served(level, steps):
    from openenv import EnvClient
    from openenv.containers import LocalProcessProvider
    from terminal_env import MODELS

    provider = LocalProcessProvider("terminal", env={"OPENENV_SANDBOX": level}, start_timeout_s=60)
    server = provider.start()
    try:
        with EnvClient(server.base_url, MODELS) as env:
            env.reset(free_shell=True)
            for _ in range(20):
                env.step(RunAction(command="echo hi"))
            times = []
            for _ in range(steps):
                t0 = time.perf_counter()
                obs = env.step(RunAction(command="echo hi")).observation
                times.append(time.perf_counter() - t0)
                assert obs.output == "hi\\n", obs.output
    finally:
        server.stop()
    print(json.dumps(times))

if sys.argv[3] == "served":
    served(sys.argv[1], int(sys.argv[2]))
else:
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def block(tree: Path, level: str, steps: int, where: str) -> list[float]:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'envs' / 'terminal_env'}"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, level, str(steps), where],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, type=Path, help="the tree to compare against")
    ap.add_argument("--levels", default="none,strict")
    ap.add_argument("--blocks", type=int, default=8, help="blocks per tree and level")
    ap.add_argument("--steps", type=int, default=200, help="timed steps per block")
    ap.add_argument("--where", default="inprocess,served", help="in process, through openenv serve")
    args = ap.parse_args()
    results = {}
    cases = [(w, lv) for w in args.where.split(",") for lv in args.levels.split(",")]
    for where, level in cases:
        medians: dict[str, list[float]] = {"old": [], "new": []}
        for i in range(args.blocks):
            order = [("old", args.old), ("new", HERE)] if i % 2 == 0 else [("new", HERE), ("old", args.old)]
            for name, tree in order:
                medians[name].append(statistics.median(block(tree, level, args.steps, where)) * 1000)
        old, new = statistics.median(medians["old"]), statistics.median(medians["new"])
        best = min(medians["new"]) / min(medians["old"])  # the quietest block of each
        results[f"{where} {level}"] = {
            "old_ms": old,
            "new_ms": new,
            "ratio": new / old,
            "ratio_of_minima": best,
            "blocks": medians,
        }
        print(
            f"{where} {level}: old {old:.3f} ms, new {new:.3f} ms, new/old {new / old:.3f}, of the "
            f"quietest blocks {best:.3f} (block medians old {min(medians['old']):.3f}-"
            f"{max(medians['old']):.3f}, new {min(medians['new']):.3f}-{max(medians['new']):.3f})",
            flush=True,
        )
    print(json.dumps({"machine": machine(), "results": results}))


if __name__ == "__main__":
    main()
