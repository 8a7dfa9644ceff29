"""Terminal env step latency, this tree against others (``--tree NAME=DIR``), same run.

Rounds of blocks, each round one block of every tree in a rotated order (a fresh child
process each, with the tree first on ``PYTHONPATH``): each block starts ``TerminalEnv``
at the level in process, resets a free shell, warms up, and times ``steps`` steps of
``echo hi``; then the same through ``openenv serve terminal`` started from the tree,
with the sync ``EnvClient``. Reported per level and tree: the median of its block
medians; against each other tree, new/other as the median of the per-round ratios (the
two blocks of a round ran next to each other: on a loaded host block medians swing
5-10x, a round's pair much less) with their quartiles and range, and the ratio of the
quietest blocks. Make a tree with ``git archive REV | tar -x -C DIR``.

    .venv/bin/python bench/bench_terminal_ab.py --tree old=/tmp/old_tree       # about a minute
    .venv/bin/python bench/bench_terminal_ab.py --tree prepump=/tmp/a --tree pump=/tmp/b \
        --blocks 8 --steps 200
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

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


STEPPER = """
import asyncio, sys, time
from terminal_env import RunAction

def steps(step):
    for _ in range(20):
        step()
    print("ready", flush=True)
    while sys.stdin.readline().strip() == "s":
        t0 = time.perf_counter()
        out = step()
        took = time.perf_counter() - t0
        assert out == "hi\\n", out
        print(took, flush=True)

async def inprocess(level):
    from terminal_env import TerminalEnv

    env = TerminalEnv(sandbox=level, pool_size=0)
    await env.reset(options={"free_shell": True})
    loop = asyncio.get_running_loop()
    try:
        for _ in range(20):
            await env.step(RunAction(command="echo hi"))
        print("ready", flush=True)
        while await loop.run_in_executor(None, sys.stdin.readline) == "s\\n":
            t0 = time.perf_counter()
            obs = await env.step(RunAction(command="echo hi"))
            took = time.perf_counter() - t0
            assert obs.output == "hi\\n", obs.output
            print(took, flush=True)
    finally:
        await env.close()

def served(level):
    from openenv import EnvClient
    from openenv.containers import LocalProcessProvider
    from terminal_env import MODELS

    provider = LocalProcessProvider("terminal", env={"OPENENV_SANDBOX": level}, start_timeout_s=60)
    server = provider.start()
    try:
        with EnvClient(server.base_url, MODELS) as env:
            env.reset(free_shell=True)
            steps(lambda: env.step(RunAction(command="echo hi")).observation.output)
    finally:
        server.stop()

if sys.argv[2] == "served":
    served(sys.argv[1])
else:
    asyncio.run(inprocess(sys.argv[1]))
"""


def tree_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'envs' / 'terminal_env'}"}


def interleaved(trees: dict[str, Path], level: str, where: str, steps: int) -> dict[str, list[float]]:
    """``steps`` steps of each tree, one of each in turn (the order rotated each turn),
    each tree's env in a process of its own for the whole run: every tree meets the
    same moments of the host's load. Seconds per step, by tree."""
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-c", STEPPER, level, where],
            env=tree_env(tree),
            cwd=tree,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name, tree in trees.items()
    }
    times: dict[str, list[float]] = {name: [] for name in trees}
    try:
        for name, proc in procs.items():
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit(f"{name}: the stepper did not start (exit {proc.wait(60)})")
        names = list(trees)
        for i in range(steps):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                proc = procs[name]
                assert proc.stdin is not None
                assert proc.stdout is not None
                proc.stdin.write("s\n")
                proc.stdin.flush()
                times[name].append(float(proc.stdout.readline()))
    finally:
        for proc in procs.values():
            with contextlib.suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.write("q\n")
                proc.stdin.close()
        for proc in procs.values():
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return times


def block(tree: Path, level: str, steps: int, where: str) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, level, str(steps), where],
        env=tree_env(tree),
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, q2, q3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=DIR", help="a tree to compare")
    ap.add_argument("--old", type=Path, help="the same as --tree old=DIR")
    ap.add_argument("--levels", default="none,strict")
    ap.add_argument("--blocks", type=int, default=8, help="rounds (one block per tree each)")
    ap.add_argument("--steps", type=int, default=200, help="timed steps per block")
    ap.add_argument("--where", default="inprocess,served", help="in process, through openenv serve")
    ap.add_argument(
        "--interleave",
        type=int,
        metavar="STEPS",
        help="instead of blocks: STEPS steps of each tree one after another, in processes kept "
        "for the run; --blocks windows of them make the rounds",
    )
    args = ap.parse_args()
    trees = {"new": HERE}
    for spec in args.tree + ([f"old={args.old}"] if args.old else []):
        name, _, path = spec.partition("=")
        if not path or name in trees:
            ap.error(f"--tree wants NAME=DIR with a new NAME: {spec!r}")
        trees[name] = Path(path)
    if len(trees) < 2:
        ap.error("give at least one tree to compare against (--tree NAME=DIR)")
    names = list(trees)
    results = {}
    cases = [(w, lv) for w in args.where.split(",") for lv in args.levels.split(",")]
    for where, level in cases:
        medians: dict[str, list[float]] = {name: [] for name in names}
        if args.interleave:  # a round: a window of the interleaved steps
            times = interleaved(trees, level, where, args.interleave)
            size = max(1, args.interleave // args.blocks)
            for name in names:
                series = times[name]
                for start in range(0, len(series) - size + 1, size):
                    medians[name].append(statistics.median(series[start : start + size]) * 1000)
        else:
            for i in range(args.blocks):
                for name in names[i % len(names) :] + names[: i % len(names)]:  # rotated
                    medians[name].append(
                        statistics.median(block(trees[name], level, args.steps, where)) * 1000
                    )
        ms = {n: statistics.median(m) for n, m in medians.items()}
        case: dict[str, Any] = {"ms": ms, "blocks": medians}
        line = [f"{where} {level}: " + ", ".join(f"{n} {ms[n]:.3f} ms" for n in names)]
        for other in names[1:]:
            ratios = [a / b for a, b in zip(medians["new"], medians[other], strict=True)]
            q1, q2, q3 = quartiles(ratios)
            best = min(medians["new"]) / min(medians[other])  # the quietest block of each
            case[f"new/{other}"] = {
                "median": q2,
                "q1": q1,
                "q3": q3,
                "min": min(ratios),
                "max": max(ratios),
                "of_medians": ms["new"] / ms[other],
                "of_minima": best,
                "rounds": ratios,
            }
            line.append(
                f"  new/{other} {q2:.3f} (rounds: quartiles {q1:.3f}-{q3:.3f}, range "
                f"{min(ratios):.3f}-{max(ratios):.3f}; of the medians {ms['new'] / ms[other]:.3f}, "
                f"of the quietest blocks {best:.3f})"
            )
        results[f"{where} {level}"] = case
        print("\n".join(line), flush=True)
    paths = {n: str(p) for n, p in trees.items()}
    print(json.dumps({"machine": machine(), "trees": paths, "results": results}))


if __name__ == "__main__":
    main()
