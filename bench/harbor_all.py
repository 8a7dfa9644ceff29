"""Every Harbor-format task through Harbor and through the terminal env, oracle and a
wrong answer each: issue 32's check, as one command whose table is recorded.

Two task sets, each one ``harbor run`` (Harbor's oracle agent in its Docker environment,
``.venv-harbor``) over the tasks and a ``<task>-wrong`` copy of each whose
``solution/solve.sh`` is a wrong answer, then the env playing the same solutions:

* ``tests``: the ten Terminal-Bench-2-style test tasks of
  ``envs/terminal_env/tests/harbor_tasks/`` (their wrong answers: ``_harbor_fixtures.WRONG``);
* ``builtin``: the env's 30 built-in tasks (their Harbor files; the wrong answer: each
  task's first fake of ``test_terminal_task_fakes.py``).

Per task: Harbor's and the env's reward for the oracle and for the wrong answer; the
check holds where both oracles are 1.0, both wrong answers below 1.0, and each pair's
named rewards are equal. The table is printed and written as JSON (``--out``); the exit
status is 1 when any task fails the check. The same code (``_harbor_job.py``) runs a
subset in CI (``test_harbor_client.py``).

Needs Docker and the Harbor venv (``scripts/setup.d/56-harbor.sh``); offline, both build on
the local base (``openenv-local/python:3.11-bookworm``; the built-in tasks on a copy with git).
About 20 minutes on a loaded 2-core machine:

    .venv/bin/python bench/harbor_all.py --out bench/results/harbor/$(date -u +%Y-%m-%dT%H%M).json
    .venv/bin/python bench/harbor_all.py --sets tests --tasks word-counts,api-count   # a few
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "envs" / "terminal_env" / "tests"))

from _harbor_fixtures import TASKS  # noqa: E402
from _harbor_job import HarborUnavailable, engine_base, env_rewards, harbor_env, run_job, write_tasks  # noqa: E402
from _util import loadavg, machine, table  # noqa: E402
from terminal_env._tasks import TASKS_DIR, task_dirs  # noqa: E402

SETS = {"tests": TASKS, "builtin": TASKS_DIR}


async def env_side(tasks: Path, base: str, names: list[str], builtin: bool) -> dict[str, Any]:
    """The env's named rewards per task folder under ``tasks`` (an error: its message)."""
    out: dict[str, Any] = {}
    for name in names:
        try:
            out[name] = await env_rewards(tasks, base, name, builtin)
        except Exception as exc:  # recorded in the table, the run goes on
            out[name] = f"{type(exc).__name__}: {exc}"[:300]
    return out


def run_set(label: str, only: list[str] | None, concurrency: int) -> dict[str, Any]:
    builtin = label == "builtin"
    source = SETS[label]
    names = [p.name for p in task_dirs(source) if only is None or p.name in only]
    with tempfile.TemporaryDirectory(prefix=f"harbor-all-{label}-") as tmp_name:
        tmp = Path(tmp_name)
        env = harbor_env(tmp)
        base = engine_base(builtin)
        tasks = tmp / "tasks"
        tasks.mkdir()
        write_tasks(tasks, source, names, names, builtin)
        load_before = loadavg()
        job = run_job(tmp, tasks, base, env, concurrency=concurrency, timeout_s=3600)
        t0 = time.perf_counter()
        folders = [*names, *(f"{n}-wrong" for n in names)]
        ours = asyncio.run(env_side(tasks, base, folders, builtin))
        env_s = time.perf_counter() - t0
    rows = []
    for name in names:
        h_ok, e_ok = job.rewards.get(name, {}), ours[name]
        h_bad, e_bad = job.rewards.get(f"{name}-wrong", {}), ours[f"{name}-wrong"]
        errors = [str(job.errors[k])[:300] for k in (name, f"{name}-wrong") if k in job.errors]
        errors += [v for v in (e_ok, e_bad) if isinstance(v, str)]
        holds = (
            not errors
            and h_ok.get("reward") == 1.0
            and h_ok == e_ok
            and h_bad.get("reward", 1.0) < 1.0
            and h_bad == e_bad
        )
        rows.append(
            {
                "task": name,
                "oracle": {"harbor": h_ok, "env": e_ok},
                "wrong": {"harbor": h_bad, "env": e_bad},
                "errors": errors,
                "holds": holds,
            }
        )
    return {
        "set": label,
        "base_images": base,
        "harbor_s": round(job.seconds, 1),
        "harbor_trials": len(job.trials),
        "env_s": round(env_s, 1),
        "env_episodes": len(folders),
        "load_before": load_before,
        "load_after": loadavg(),
        "rows": rows,
    }


def reward(v: Any) -> str:
    if isinstance(v, str):
        return "error"
    return "-" if "reward" not in v else f"{v['reward']:.3g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="tests,builtin", help="comma-separated: tests, builtin")
    ap.add_argument("--tasks", help="comma-separated task names (default: every task of each set)")
    ap.add_argument("-n", "--concurrency", type=int, default=2, help="Harbor's concurrent trials")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    labels = [s for s in args.sets.split(",") if s]
    unknown = [s for s in labels if s not in SETS]
    if unknown:
        print(f"harbor_all: unknown set {unknown[0]!r} (known: {', '.join(SETS)})", file=sys.stderr)
        return 2
    only = args.tasks.split(",") if args.tasks else None
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        results = [run_set(label, only, args.concurrency) for label in labels]
    except HarborUnavailable as exc:
        print(f"harbor_all: {exc}", file=sys.stderr)
        return 2
    rows = [
        [
            r["set"],
            row["task"],
            reward(row["oracle"]["harbor"]),
            reward(row["oracle"]["env"]),
            reward(row["wrong"]["harbor"]),
            reward(row["wrong"]["env"]),
            "yes" if row["holds"] else "NO",
        ]
        for r in results
        for row in r["rows"]
    ]
    print(table(["set", "task", "oracle Harbor", "oracle env", "wrong Harbor", "wrong env", "holds"], rows))
    for r in results:
        held = sum(row["holds"] for row in r["rows"])
        harbor = f"Harbor {r['harbor_trials']} trials in {r['harbor_s']} s"
        ours = f"the env {r['env_episodes']} episodes in {r['env_s']} s"
        load = f"load {r['load_before']} -> {r['load_after']}"
        print(f"{r['set']}: {held}/{len(r['rows'])} hold; {harbor}, {ours} ({load})")
        for row in r["rows"]:
            for error in row["errors"]:
                print(f"  {row['task']}: {error}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        record = {"started": started, "machine": machine(), "sets": results}
        Path(args.out).write_text(json.dumps(record, indent=1))
    return 0 if all(row["holds"] for r in results for row in r["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
