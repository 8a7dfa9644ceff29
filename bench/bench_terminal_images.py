"""Terminal env, tasks with an image of their own: reset and step against the sandbox, one run.

In one process, alternating, on the same machine minute (so the figures compare):

* step: ``run "echo hi"`` in a container session (``docker exec -it`` shell) against
  the same step in a sandboxed free shell (the env's default session);
* reset: a container session cold (no pool: container and shell started in the
  reset), warm (``image_pool_size=1``, the pool refilled untimed between resets, as
  between episodes of real length), against the sandbox's warm-pool reset;
* submit: the container verifier (restart, tests copied in, ``test.sh``, reward read
  through the engine) for the word-counts test task;
* build: the task's image for a new content hash (the base image's layers cached).

Needs Docker; offline it builds on ``OPENENV_BASE_IMAGE`` (the local python base).

    .venv/bin/python bench/bench_terminal_images.py            # about a minute
    .venv/bin/python bench/bench_terminal_images.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _util import fmt, machine, median, pct, table
from terminal_env import SubmitAction, TerminalAction, TerminalEnv

TASKS = Path(__file__).resolve().parents[1] / "envs" / "terminal_env" / "tests" / "harbor_tasks"
TASK = {"task_id": "word-counts"}
ECHO = TerminalAction(command="echo hi")
LOCAL_BASE = "openenv-local/python:3.11-bookworm"


async def steps(env: TerminalEnv, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await env.step(ECHO)
        out.append(time.perf_counter() - t0)
    return out


async def wait_pool(env: TerminalEnv) -> None:
    """Until every pool of ``env`` is full again and torn-down sessions are gone (untimed)."""
    images, pool = env.resources.images, env.resources.pool
    for _ in range(1000):
        filling = any(images._filling.values()) or bool(pool._filling)
        if not filling:
            break
        await asyncio.sleep(0.01)
    await asyncio.gather(*env._closing)


async def resets(env: TerminalEnv, n: int, options: dict[str, Any], *, pooled: bool) -> list[float]:
    out = []
    for _ in range(n):
        if pooled:
            await wait_pool(env)
        else:
            await asyncio.gather(*env._closing)
        t0 = time.perf_counter()
        await env.reset(options=options)
        out.append(time.perf_counter() - t0)
    return out


async def submits(env: TerminalEnv, n: int) -> list[float]:
    out = []
    for _ in range(n):
        await env.reset(options=TASK)
        t0 = time.perf_counter()
        await env.step(SubmitAction())
        out.append(time.perf_counter() - t0)
    return out


def build_once() -> float:
    """Seconds to build the task's image for a content hash the engine has not seen."""
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / "word-counts"
        shutil.copytree(TASKS / "word-counts", task)
        (task / "environment" / "notes.txt").write_text(f"fresh {time.time_ns()}\n")
        env = TerminalEnv(sandbox="none", tasks_dir=tmp, pool_size=0, image_pool_size=0)
        from terminal_env._tasks import TerminalTask

        t0 = time.perf_counter()
        tag = env.resources.images.image(TerminalTask.from_dir(task))
        took = time.perf_counter() - t0
        env.resources.images.client().images.remove(tag, force=True)
        asyncio.run(env.close())
    return took


async def measure(rounds: int, n_steps: int, n_resets: int) -> dict[str, Any]:
    level = os.environ.get("OPENENV_SANDBOX", "auto")
    box = TerminalEnv(sandbox=level, tasks_dir=str(TASKS), pool_size=2, image_pool_size=0)
    sand = TerminalEnv(sandbox=level, pool_size=2)
    warm = TerminalEnv(sandbox=level, tasks_dir=str(TASKS), pool_size=0, image_pool_size=1)
    try:
        await box.reset(options=TASK)  # builds the image if needed
        await sand.reset(options={"free_shell": True})
        await steps(box, 30)
        await steps(sand, 30)
        step: dict[str, list[float]] = {"sandbox": [], "container": []}
        reset: dict[str, list[float]] = {
            "sandbox, warm pool": [],
            "container, cold": [],
            "container, warm pool": [],
        }
        for _ in range(rounds):
            step["sandbox"] += await steps(sand, n_steps)
            step["container"] += await steps(box, n_steps)
        for _ in range(rounds):
            reset["sandbox, warm pool"] += await resets(sand, n_resets, {"free_shell": True}, pooled=True)
            reset["container, cold"] += await resets(box, n_resets, TASK, pooled=False)
            reset["container, warm pool"] += await resets(warm, n_resets, TASK, pooled=True)
        submit = await submits(box, n_resets * rounds)
        return {"level": box.resources.isolation.value, "step": step, "reset": reset, "submit": submit}
    finally:
        for env in (box, sand, warm):
            await env.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    if not os.environ.get("OPENENV_BASE_IMAGE") and shutil.which("docker"):
        os.environ["OPENENV_BASE_IMAGE"] = LOCAL_BASE  # offline: FROM python:* on the local base
    rounds, n_steps, n_resets = (2, 50, 3) if args.quick else (4, 100, 5)
    print(json.dumps(machine()))
    res = asyncio.run(measure(rounds, n_steps, n_resets))
    res["build_s"] = build_once()
    ms = 1000.0
    base_step = median(res["step"]["sandbox"])
    rows = [
        [f"step, {name}", fmt(median(v) * ms, 2), fmt(pct(v, 90) * ms, 2), fmt(median(v) / base_step, 2)]
        for name, v in res["step"].items()
    ]
    base_reset = median(res["reset"]["sandbox, warm pool"])
    rows += [
        [f"reset, {name}", fmt(median(v) * ms, 1), fmt(pct(v, 90) * ms, 1), fmt(median(v) / base_reset, 1)]
        for name, v in res["reset"].items()
    ]
    rows.append(
        [
            "submit (container verifier)",
            fmt(median(res["submit"]) * ms, 0),
            fmt(pct(res["submit"], 90) * ms, 0),
            "-",
        ]
    )
    rows.append(["image build, new content", fmt(res["build_s"] * ms, 0), "-", "-"])
    print(f"sandbox level: {res['level']}")
    print(table(["what", "median ms", "p90 ms", "x sandbox"], rows))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": machine(), **res}, f)


if __name__ == "__main__":
    sys.exit(main())
