"""Terminal env, a Dockerfile task (issue 32's bounds), against in-run baselines, one run.

On the ``word-counts`` test task (its own ``environment/Dockerfile``), in one process
and one run, each figure beside its baseline:

* reset to first observation, warm (a started container of the image waiting in the
  pool, ``image_pool_size=1``, refilled untimed between resets) and cold (no pool, the
  image built): bounds 0.1 s and 1 s; baseline the sandboxed session's warm-pool reset;
* the cold reset's phases (the engine's create and start, the disk limit's own layer
  filesystem of ``_disk.py``, the shell's ``docker exec``), and the cold reset with no disk
  limit (``disk=none``) beside it: what the limit costs; and the cold reset with its layer
  filesystem formatted in the reset (no spare ready, ``_disk_spares.py``): what spares save;
* step overhead: ``run "echo hi"`` in the container session minus the same step in a
  sandboxed session (bound 1 ms; also the ratio);
* 32 concurrent container sessions on one server's resources: every one resets to a
  first observation and steps; wall time and failures (bound: 0 failures);
* Harbor's own Docker environment (``DockerEnvironment`` of the ``harbor`` package,
  run with ``.venv-harbor``'s Python by ``bench/_harbor_docker_env.py``) on the same
  task folder, its ``FROM`` mapped as the env maps it: start time and per-command time,
  as ratios of ours.

Needs Docker; offline it builds on ``OPENENV_BASE_IMAGE`` (the local python base). The
load average is recorded beside each block (the machine is shared).

    .venv/bin/python bench/bench_container_tasks.py \
        --out bench/results/containers/$(date -u +%Y-%m-%dT%H%M).json
    .venv/bin/python bench/bench_container_tasks.py --quick --out /tmp/q.json   # a few minutes
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _util import fmt, machine, median, pct, table
from bench_terminal_images import ECHO, LOCAL_BASE, TASK, TASKS, resets, steps, wait_pool
from terminal_env import TerminalEnv
from terminal_env._image import base_map, rewrite_dockerfile
from terminal_env.env import TerminalResources

REPO = Path(__file__).resolve().parents[1]
HARBOR_PY = REPO / ".venv-harbor" / "bin" / "python"
COMPOSE_PLUGINS = REPO / ".venv-harbor" / "docker" / "cli-plugins"
BOUNDS = {"reset_warm_s": 0.1, "reset_cold_s": 1.0, "step_overhead_ms": 1.0, "concurrent_failures": 0}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def concurrent(n: int, level: str) -> dict[str, Any]:
    """``n`` container sessions at once on one server's resources (no pool: every container
    started in its reset): each resets to a first observation and steps once."""
    res = TerminalResources.build(level, str(TASKS), 0, None, None, 0, TerminalEnv.task_set)
    envs = [TerminalEnv(res) for _ in range(n)]

    async def one(env: TerminalEnv) -> str | None:
        try:
            obs = await env.reset(options=TASK)
            if not obs.output and obs.done:
                return "reset gave no observation"
            out = await env.step(ECHO)
            return None if "hi" in out.output else f"step output {out.output[-80:]!r}"
        except Exception as exc:  # a failure is counted and reported
            return f"{type(exc).__name__}: {exc}"[:300]

    t0 = time.perf_counter()
    got = await asyncio.wait_for(asyncio.gather(*(one(e) for e in envs)), timeout=600)
    wall = time.perf_counter() - t0
    for env in envs:
        await env.close()
    res.pool.close_now()
    res.images.close()
    errors = [e for e in got if e]
    return {"n": n, "wall_s": wall, "failures": len(errors), "errors": errors[:5]}


class Phases:
    """Seconds per phase of the container sessions started while it is on: the engine's
    create and start (``ContainerBox._run``, the layer filesystem included), the layer
    filesystem alone (``_disk.attach``) and the shell's start (``docker exec ... bash``)."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {"engine create+start": [], "disk layer": [], "shell start": []}
        self._undo: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> Phases:
        from terminal_env import _disk
        from terminal_env._container import ContainerBox
        from terminal_env._shell import PtyShell

        def timed(owner: Any, name: str, key: str) -> None:
            real = getattr(owner, name)
            self._undo.append((owner, name, real))
            if asyncio.iscoroutinefunction(real):

                async def awrap(*a: Any, **kw: Any) -> Any:
                    t0 = time.perf_counter()
                    try:
                        return await real(*a, **kw)
                    finally:
                        self.times[key].append(time.perf_counter() - t0)

                setattr(owner, name, awrap)
            else:

                def wrap(*a: Any, **kw: Any) -> Any:
                    t0 = time.perf_counter()
                    try:
                        return real(*a, **kw)
                    finally:
                        self.times[key].append(time.perf_counter() - t0)

                setattr(owner, name, wrap)

        timed(ContainerBox, "_run", "engine create+start")
        timed(_disk, "attach", "disk layer")
        timed(PtyShell, "start", "shell start")
        return self

    def __exit__(self, *exc: Any) -> None:
        for owner, name, real in reversed(self._undo):
            setattr(owner, name, real)


async def cold_resets(env: TerminalEnv, n: int, *, spares: bool) -> list[float]:
    """Cold resets (no pool); with ``spares``, the disk limit's filesystem formatted ahead
    (``_disk_spares.py``: waited for untimed, as between episodes); without, none ready
    (formatted in the reset, as before spares)."""
    from terminal_env import _disk_spares

    out = []
    for _ in range(n):
        if spares:
            for _ in range(1000):  # 10 s at most
                if not _disk_spares._filling:
                    break
                await asyncio.sleep(0.01)
        else:
            _disk_spares.discard()
        out += await resets(env, 1, TASK, pooled=False)
    return out


async def ours(rounds: int, n_steps: int, n_resets: int, n_conc: int) -> dict[str, Any]:
    level = os.environ.get("OPENENV_SANDBOX", "auto")
    box = TerminalEnv(sandbox=level, tasks_dir=str(TASKS), pool_size=2, image_pool_size=0)
    sand = TerminalEnv(sandbox=level, pool_size=2)
    warm = TerminalEnv(sandbox=level, tasks_dir=str(TASKS), pool_size=0, image_pool_size=1)
    nodisk = TerminalEnv(
        sandbox=level, tasks_dir=str(TASKS), pool_size=0, image_pool_size=0, session_limits="disk=none"
    )
    out: dict[str, Any] = {"level": box.resources.isolation.value}
    try:
        await box.reset(options=TASK)  # builds the image if needed (untimed)
        await sand.reset(options={"free_shell": True})
        await warm.reset(options=TASK)
        await nodisk.reset(options=TASK)
        await steps(box, 20)
        await steps(sand, 20)
        step: dict[str, list[float]] = {"sandbox": [], "container": []}
        out["load_step"] = load()
        for _ in range(rounds):
            step["sandbox"] += await steps(sand, n_steps)
            step["container"] += await steps(box, n_steps)
        reset: dict[str, list[float]] = {
            "sandbox, warm pool": [],
            "container, warm pool": [],
            "container, cold": [],
            "container, cold, no spare": [],
            "container, cold, no disk limit": [],
        }
        out["load_reset"] = load()
        phases, nospare = Phases(), Phases()
        for _ in range(rounds):
            reset["sandbox, warm pool"] += await resets(sand, n_resets, {"free_shell": True}, pooled=True)
            reset["container, warm pool"] += await resets(warm, n_resets, TASK, pooled=True)
            for _ in range(n_resets):  # interleaved, one each: the load moves between blocks
                with phases:
                    reset["container, cold"] += await cold_resets(box, 1, spares=True)
                with nospare:
                    reset["container, cold, no spare"] += await cold_resets(box, 1, spares=False)
            reset["container, cold, no disk limit"] += await resets(nodisk, n_resets, TASK, pooled=False)
        await wait_pool(warm)
        out |= {
            "step": step,
            "reset": reset,
            "cold_phases": phases.times,
            "cold_phases_nospare": nospare.times,
        }
        out["disk"] = (await box.state()).sandbox.get("disk", "enforced")
    finally:
        for env in (box, sand, warm, nodisk):
            await env.close()
    out["load_concurrent"] = load()
    out["concurrent"] = await concurrent(n_conc, level)
    return out


def harbor(starts: int, commands: int) -> dict[str, Any]:
    """Harbor's Docker environment on a copy of the task (``FROM`` mapped); or why not."""
    if not HARBOR_PY.exists():
        return {"skipped": f"{HARBOR_PY} is absent (scripts/setup.d/56-harbor.sh makes it)"}
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / TASK["task_id"]
        shutil.copytree(TASKS / TASK["task_id"], task)
        for dockerfile in task.glob("environment/**/Dockerfile"):
            dockerfile.write_text(rewrite_dockerfile(dockerfile.read_text(), base_map()))
        env = dict(os.environ, HARBOR_TELEMETRY="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60)
        if probe.returncode != 0:
            config = Path(tmp) / "docker-config"
            config.mkdir()
            (config / "config.json").write_text(json.dumps({"cliPluginsExtraDirs": [str(COMPOSE_PLUGINS)]}))
            env["DOCKER_CONFIG"] = str(config)
        argv = [str(HARBOR_PY), str(REPO / "bench" / "_harbor_docker_env.py"), str(task)]
        argv += ["--starts", str(starts), "--commands", str(commands)]
        before = load()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            return {"error": (done.stdout + done.stderr)[-2000:], "load": before}
        return {**json.loads(done.stdout.strip().splitlines()[-1]), "load": before}


def report(res: dict[str, Any]) -> dict[str, Any]:
    """The headline figures, each with its baseline and bound."""
    ms = 1000.0
    step, reset, conc, hb = res["step"], res["reset"], res["concurrent"], res["harbor"]
    s_box, s_con = median(step["sandbox"]), median(step["container"])
    r_base = median(reset["sandbox, warm pool"])
    r_warm, r_cold = median(reset["container, warm pool"]), median(reset["container, cold"])
    fig: dict[str, Any] = {
        "reset_warm_s": r_warm,
        "reset_warm_p90_s": pct(reset["container, warm pool"], 90),
        "reset_cold_s": r_cold,
        "reset_cold_p90_s": pct(reset["container, cold"], 90),
        "reset_cold_nodisk_s": median(reset["container, cold, no disk limit"]),
        "reset_cold_nodisk_p90_s": pct(reset["container, cold, no disk limit"], 90),
        "reset_cold_x_nodisk": r_cold / median(reset["container, cold, no disk limit"]),
        "reset_cold_nospare_s": median(reset["container, cold, no spare"]),
        "reset_cold_nospare_p90_s": pct(reset["container, cold, no spare"], 90),
        "reset_cold_x_nospare": r_cold / median(reset["container, cold, no spare"]),
        "cold_phases_s": {k: median(v) for k, v in res["cold_phases"].items() if v},
        "cold_phases_nospare_s": {k: median(v) for k, v in res["cold_phases_nospare"].items() if v},
        "reset_sandbox_warm_s": r_base,
        "reset_warm_x_sandbox": r_warm / r_base,
        "reset_cold_x_sandbox": r_cold / r_base,
        "step_container_ms": s_con * ms,
        "step_sandbox_ms": s_box * ms,
        "step_overhead_ms": (s_con - s_box) * ms,
        "step_x_sandbox": s_con / s_box,
        "concurrent_n": conc["n"],
        "concurrent_wall_s": conc["wall_s"],
        "concurrent_failures": conc["failures"],
    }
    if hb.get("start"):
        fig |= {
            "harbor_start_s": median(hb["start"]),
            "harbor_exec_ms": median(hb["exec"]) * ms,
            "harbor_start_x_our_cold_reset": median(hb["start"]) / r_cold,
            "harbor_start_x_our_warm_reset": median(hb["start"]) / r_warm,
            "harbor_exec_x_our_step": median(hb["exec"]) / s_con,
        }
    fig["met"] = {
        "reset_warm": r_warm <= BOUNDS["reset_warm_s"],
        "reset_cold": r_cold <= BOUNDS["reset_cold_s"],
        "step_overhead": (s_con - s_box) * ms <= BOUNDS["step_overhead_ms"],
        "concurrent": conc["failures"] == 0,
    }
    return fig


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--quick", action="store_true", help="fewer rounds, 8 concurrent sessions, 1 Harbor start"
    )
    ap.add_argument("--concurrent", type=int, help="concurrent sessions (default 32, --quick 8)")
    ap.add_argument("--no-harbor", action="store_true", help="leave Harbor's Docker environment out")
    ap.add_argument("--out")
    args = ap.parse_args()
    if not os.environ.get("OPENENV_BASE_IMAGE") and shutil.which("docker"):
        os.environ["OPENENV_BASE_IMAGE"] = LOCAL_BASE  # offline: FROM python:* on the local base
    rounds, n_steps, n_resets, n_conc, starts, cmds = (
        (1, 30, 3, 8, 1, 10) if args.quick else (3, 100, 5, 32, 3, 30)
    )
    n_conc = args.concurrent or n_conc
    t0 = time.time()
    load_start = load()
    res = asyncio.run(ours(rounds, n_steps, n_resets, n_conc))
    res["harbor"] = {"skipped": "--no-harbor"} if args.no_harbor else harbor(starts, cmds)
    fig = report(res)
    ms = 1000.0
    rows = [
        [
            "reset warm (pool)",
            fmt(fig["reset_warm_s"] * ms, 1),
            fmt(fig["reset_warm_x_sandbox"], 2),
            "<= 100 ms",
            res["load_reset"],
        ],
        [
            "reset cold (image built)",
            fmt(fig["reset_cold_s"] * ms, 0),
            fmt(fig["reset_cold_x_sandbox"], 1),
            "<= 1000 ms",
            res["load_reset"],
        ],
        [
            "reset cold, disk formatted in the reset",
            fmt(fig["reset_cold_nospare_s"] * ms, 0),
            f"{fig['reset_cold_x_nospare']:.2f}x -> cold",
            f"p90 {fig['reset_cold_p90_s'] * ms:.0f} vs {fig['reset_cold_nospare_p90_s'] * ms:.0f}",
            res["load_reset"],
        ],
        [
            "reset cold, no disk limit",
            fmt(fig["reset_cold_nodisk_s"] * ms, 0),
            f"{fig['reset_cold_x_nodisk']:.2f}x -> cold",
            f"p90 {fig['reset_cold_p90_s'] * ms:.0f} vs {fig['reset_cold_nodisk_p90_s'] * ms:.0f}",
            res["load_reset"],
        ],
        *(
            [f"  cold phase: {name}", fmt(sec * ms, 0), "-", "-", res["load_reset"]]
            for name, sec in fig["cold_phases_s"].items()
        ),
        *(
            [f"  cold phase, no spare: {name}", fmt(sec * ms, 0), "-", "-", res["load_reset"]]
            for name, sec in fig["cold_phases_nospare_s"].items()
        ),
        [
            "reset sandboxed (warm pool)",
            fmt(fig["reset_sandbox_warm_s"] * ms, 1),
            "1.00",
            "baseline",
            res["load_reset"],
        ],
        [
            "step container",
            fmt(fig["step_container_ms"], 2),
            fmt(fig["step_x_sandbox"], 2),
            f"+{fig['step_overhead_ms']:.2f} ms (<= +1 ms)",
            res["load_step"],
        ],
        ["step sandboxed", fmt(fig["step_sandbox_ms"], 2), "1.00", "baseline", res["load_step"]],
        [
            f"{fig['concurrent_n']} concurrent sessions, reset+step",
            fmt(fig["concurrent_wall_s"] * ms, 0),
            "-",
            f"failures {fig['concurrent_failures']} (0)",
            res["load_concurrent"],
        ],
    ]
    hb = res["harbor"]
    if "harbor_start_s" in fig:
        rows += [
            [
                "Harbor DockerEnvironment start",
                fmt(fig["harbor_start_s"] * ms, 0),
                f"{fig['harbor_start_x_our_cold_reset']:.1f}x our cold",
                "-",
                hb["load"],
            ],
            [
                "Harbor exec echo hi",
                fmt(fig["harbor_exec_ms"], 1),
                f"{fig['harbor_exec_x_our_step']:.0f}x our step",
                "-",
                hb["load"],
            ],
        ]
    else:
        print(f"harbor: {hb.get('skipped') or hb.get('error')}", file=sys.stderr)
    print(f"sandbox level: {res['level']}; container disk limit: {res['disk']}")
    print(f"load at start {load_start}, end {load()}")
    print(table(["what", "median ms", "x baseline", "bound", "load 1/5/15"], rows))
    for err in res["concurrent"]["errors"]:
        print(f"concurrent failure: {err}", file=sys.stderr)
    if args.out:
        doc = {
            "machine": machine(),
            "quick": args.quick,
            "started": t0,
            "wall_s": time.time() - t0,
            "load_start": load_start,
            "load_end": load(),
            "bounds": BOUNDS,
            "figures": fig,
            **res,
        }
        with open(args.out, "w") as f:
            json.dump(doc, f)


if __name__ == "__main__":
    sys.exit(main())
