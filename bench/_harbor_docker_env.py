"""Harbor's own Docker environment on one task folder: start time and per-command time.

Run by ``bench/bench_container_tasks.py`` with the Harbor venv's Python (3.12):

    .venv-harbor/bin/python bench/_harbor_docker_env.py TASK_DIR --starts 3 --commands 50

One untimed start first (it builds the image where compose has none), then ``--starts``
timed ``start`` calls, each followed by ``--commands`` timed ``exec("echo hi")`` and an
untimed ``stop(delete=True)``. Prints one JSON object (seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import tempfile
import time
from pathlib import Path

from harbor.environments.docker.docker import DockerEnvironment
from harbor.models.task.task import Task
from harbor.models.trial.paths import TrialPaths


def make_env(task: Task, trial_dir: Path, n: int) -> DockerEnvironment:
    paths = TrialPaths(trial_dir=trial_dir / f"trial-{n}")
    paths.mkdir()
    return DockerEnvironment(
        environment_dir=task.paths.environment_dir,
        environment_name=task.short_name,
        session_id=f"openenv-bench-{n}",
        trial_paths=paths,
        task_env_config=task.config.environment,
        logger=logging.getLogger("harbor-bench"),
    )


async def measure(task_dir: Path, starts: int, commands: int) -> dict[str, list[float]]:
    task = Task(task_dir)
    out: dict[str, list[float]] = {"start": [], "stop": [], "exec": []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(starts + 1):
            env = make_env(task, Path(tmp), n)
            t0 = time.perf_counter()
            await env.start(force_build=False)
            took = time.perf_counter() - t0
            try:
                for _ in range(commands if n else 2):
                    t1 = time.perf_counter()
                    res = await env.exec("echo hi")
                    if n:
                        out["exec"].append(time.perf_counter() - t1)
                    if res.return_code != 0 or "hi" not in (res.stdout or ""):
                        raise RuntimeError(
                            f"harbor exec gave {res.return_code}: {res.stdout!r} {res.stderr!r}"
                        )
            finally:
                t2 = time.perf_counter()
                await env.stop(delete=True)
                if n:
                    out["start"].append(took)
                    out["stop"].append(time.perf_counter() - t2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("task_dir")
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--commands", type=int, default=50)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(json.dumps(asyncio.run(measure(Path(args.task_dir), args.starts, args.commands))))


if __name__ == "__main__":
    main()
