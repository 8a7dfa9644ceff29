"""What the session limits (a cgroup and a tmpfs per sandbox) cost: before and after.

Same run, alternating blocks, at the level this machine gives (bubblewrap here):

* ``reset``: a new sandbox (``Sandbox(config)``: directory, uid, cgroup, tmpfs) and its
  close, as a terminal or coding session pays on each reset;
* ``step``: one command in an open sandbox (``sh -c true``), a new process;
* ``terminal reset`` / ``terminal step``: the terminal env's own reset (a new sandbox and
  shell) and step (``true`` in the session's persistent shell), called as the server
  calls them;
* ``coding reset`` / ``coding step``: the coding env's reset (a new worker) and step
  (the cell ``1 + 1`` in the session's worker);
* both envs' resets with their default pools of ready sandboxes (terminal 2, coding 4:
  the new session takes a ready one, the pool refills beside it) and with none
  (``pool_size=0``: each reset starts its shell or worker itself).

Each with the limits ``off`` and with the defaults (the envs get them as their
``session_limits`` argument); a figure is the median over ``--rounds`` of each block's
median, the overhead the median of per-round differences.

    .venv/bin/python bench/bench_sandbox_limits.py [--resets 20] [--steps 50] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import loadavg, table
from openenv.sandbox import Sandbox, SandboxConfig
from openenv.sandbox._config import SessionLimits

os.environ.pop("OPENENV_SANDBOX_LIMITS", None)  # the defaults, not this shell's

#: The envs' ``session_limits`` argument for each column.
ENV_LIMITS = {"limits off": "off", "limits on": None}

CONFIGS = {
    "limits off": SandboxConfig(level="auto", session_limits=SessionLimits.off()),  # type: ignore[arg-type]
    "limits on": SandboxConfig(level="auto"),  # type: ignore[arg-type]
}


def reset_ms(config: SandboxConfig, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        with Sandbox(config):
            pass
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def step_ms(config: SandboxConfig, n: int) -> float:
    times = []
    with Sandbox(config) as box:
        for _ in range(n):
            t0 = time.perf_counter()
            box.run(["sh", "-c", "true"], timeout_s=10)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def terminal_ms(limits: str | None, resets: int, steps: int, pool_size: int = 2) -> tuple[float, float]:
    from terminal_env import RunAction, TerminalEnv

    async def run() -> tuple[float, float]:
        env = TerminalEnv(sandbox="auto", session_limits=limits, pool_size=pool_size)
        reset_t, step_t = [], []
        try:
            for _ in range(resets):
                t0 = time.perf_counter()
                await env.reset()
                reset_t.append((time.perf_counter() - t0) * 1000)
            for _ in range(steps):
                t0 = time.perf_counter()
                obs = await env.step(RunAction(command="true"))
                step_t.append((time.perf_counter() - t0) * 1000)
                assert obs.exit_code == 0, obs
        finally:
            await env.close()
        return statistics.median(reset_t), statistics.median(step_t)

    return asyncio.run(run())


def coding_ms(limits: str | None, resets: int, steps: int, pool_size: int = 4) -> tuple[float, float]:
    from coding_env import CodeAction, CodingEnv

    env = CodingEnv(sandbox="auto", session_limits=limits, pool_size=pool_size)
    reset_t, step_t = [], []
    try:
        for _ in range(resets):
            t0 = time.perf_counter()
            env.reset()
            reset_t.append((time.perf_counter() - t0) * 1000)
        for _ in range(steps):
            t0 = time.perf_counter()
            obs = env.step(CodeAction(code="1 + 1"))
            step_t.append((time.perf_counter() - t0) * 1000)
            assert obs.exception is None, obs
            assert obs.result == "2", obs
    finally:
        env.close()
    return statistics.median(reset_t), statistics.median(step_t)


KINDS = (
    "reset",
    "step",
    "terminal reset",
    "terminal step",
    "coding reset",
    "coding step",
    "terminal reset, no pool",
    "coding reset, no pool",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resets", type=int, default=20)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with Sandbox(CONFIGS["limits on"]) as box:
        report = box.describe()
    got: dict[str, dict[str, list[float]]] = {name: {kind: [] for kind in KINDS} for name in CONFIGS}
    for _ in range(args.rounds):
        for name, config in CONFIGS.items():
            got[name]["reset"].append(reset_ms(config, args.resets))
            got[name]["step"].append(step_ms(config, args.steps))
            for env, measure in (("terminal", terminal_ms), ("coding", coding_ms)):
                reset, step = measure(ENV_LIMITS[name], args.resets, args.steps)
                got[name][f"{env} reset"].append(reset)
                got[name][f"{env} step"].append(step)
                cold, _ = measure(ENV_LIMITS[name], args.resets, 1, pool_size=0)
                got[name][f"{env} reset, no pool"].append(cold)
    rows = []
    for kind in KINDS:
        off, on = got["limits off"][kind], got["limits on"][kind]
        extra = statistics.median(b - a for a, b in zip(off, on, strict=True))
        rows.append([kind, f"{statistics.median(off):.2f}", f"{statistics.median(on):.2f}", f"{extra:+.2f}"])
    print(f"level {report['level']}; session limits {report.get('session_limits')}")
    print(f"load {loadavg()}; {args.rounds} rounds")
    print(table(["ms (median)", "limits off", "limits on", "overhead"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
