"""Harbor itself over task folders, and the terminal env over the same folders: one
``harbor run`` (its oracle agent, its Docker environment) and the env's named rewards
per task. Shared by test_harbor_client.py (a CI subset) and bench/harbor_all.py (every
test task and every built-in task, each also with a wrong answer); imported by plain
name, with no pytest in it.

Offline, Harbor builds from a copy of the tasks whose ``FROM`` lines are mapped by this
env's own mapping to the local base; the env maps the originals itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _harbor_fixtures import LOCAL_BASE_IMAGE, WRONG, episode, task_env

REPO = Path(__file__).resolve().parents[3]
HARBOR_VENV = REPO / ".venv-harbor"
HARBOR = HARBOR_VENV / "bin" / "harbor"
COMPOSE_PLUGINS = HARBOR_VENV / "docker" / "cli-plugins"
GIT_BASE_IMAGE = "openenv-local/python-git:3.11"


class HarborUnavailable(Exception):
    """Harbor cannot run here (no venv, no Docker engine, no ``docker compose`` v2): why."""


def engine_base(builtin: bool) -> str:
    """The env's ``base_images`` mapping for a task set (``""`` where the local base is
    absent); the built-in tasks' base gets git, which four of them need."""
    from openenv._exceptions import ProviderError
    from openenv.containers._docker import docker_client

    try:
        client = docker_client()
    except ProviderError as exc:
        raise HarborUnavailable(f"the Harbor client runs need a Docker engine: {exc}") from exc
    try:
        local = bool(client.images.list(name=LOCAL_BASE_IMAGE))
    finally:
        client.close()
    if not local:
        return ""
    python = git_base(LOCAL_BASE_IMAGE) if builtin else LOCAL_BASE_IMAGE
    # ubuntu:24.04: the `harbor task init` template's base, mapped like the python base
    return f"python:3.11-slim={python},ubuntu:24.04={LOCAL_BASE_IMAGE}"


def git_base(fallback: str) -> str:
    """A local image with Python 3.11 and git, run as root: the terminal env's own image
    (``openenv-terminal``, built by its tests) with its user and entrypoint reset; else
    ``fallback`` (the git tasks then fail to build in Harbor, saying so)."""
    # its server's /health check replaced (compose's --wait needs one that passes)
    dockerfile = (
        'FROM openenv-terminal:latest\nUSER root\nENTRYPOINT []\nCMD ["bash"]\n'
        "HEALTHCHECK --interval=1s --start-period=0s CMD true\n"
    )
    argv = ["docker", "build", "-q", "-t", GIT_BASE_IMAGE, "-"]
    done = subprocess.run(argv, input=dockerfile, capture_output=True, text=True, timeout=300)
    return GIT_BASE_IMAGE if done.returncode == 0 else fallback


def harbor_env(tmp: Path) -> dict[str, str]:
    """The environment Harbor runs in: no telemetry, LiteLLM's bundled cost map (it
    fetches one otherwise), and the compose plugin of the venv where the Docker CLI has
    none (through a Docker config of our own naming it)."""
    if not HARBOR.exists():
        raise HarborUnavailable(f"the Harbor client runs need {HARBOR} (run scripts/setup.d/56-harbor.sh)")
    env = dict(os.environ, HARBOR_TELEMETRY="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60)
    if probe.returncode != 0:
        if not (COMPOSE_PLUGINS / "docker-compose").exists():
            raise HarborUnavailable(
                "Harbor needs `docker compose` v2: the Docker CLI has no compose plugin and "
                f"{COMPOSE_PLUGINS} has none (run scripts/setup.d/56-harbor.sh)"
            )
        config = tmp / "docker-config"
        config.mkdir(exist_ok=True)
        (config / "config.json").write_text(json.dumps({"cliPluginsExtraDirs": [str(COMPOSE_PLUGINS)]}))
        env["DOCKER_CONFIG"] = str(config)
    return env


def harbor(env: dict[str, str], *args: str, cwd: Path, timeout_s: float = 120) -> str:
    """``harbor ARGS``; its output. A non-zero exit is an ``AssertionError`` with its tail."""
    argv = [str(HARBOR), *args]
    proc = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"harbor {' '.join(args)} exited {proc.returncode}:\n{out[-4000:]}"
    return out


def wrong_answer(name: str, builtin: bool) -> str:
    """A wrong answer (a shell command): a test task's, or a built-in task's first fake."""
    if not builtin:
        return WRONG[name]
    from test_terminal_task_fakes import FAKES

    return next(iter(FAKES[name].values()))


def write_tasks(
    dest: Path, source: Path, oracles: Iterable[str], wrongs: Iterable[str], builtin: bool
) -> None:
    """Copies of ``source``'s tasks ``oracles`` under ``dest``, and ``<name>-wrong`` copies
    of ``wrongs`` whose ``solve.sh`` is a wrong answer."""
    for name in oracles:
        shutil.copytree(source / name, dest / name)
    for name in wrongs:
        shutil.copytree(source / name, dest / f"{name}-wrong")
        solve = dest / f"{name}-wrong" / "solution" / "solve.sh"
        solve.write_text(f"#!/bin/bash\n{wrong_answer(name, builtin)}\n")


@dataclass
class Job:
    tasks: Path  # the folders as written (the env maps their FROM itself)
    base: str  # the env's base_images
    rewards: dict[str, dict[str, float]]  # Harbor's per-task named rewards
    errors: dict[str, Any]  # Harbor's per-task exceptions (none expected)
    dataset: Path  # Harbor's copy (FROM mapped)
    trials: list[str]  # Harbor's trial names (its compose projects and images are named by them)
    seconds: float  # the `harbor run`'s wall time


def run_job(
    tmp: Path, tasks: Path, base: str, env: dict[str, str], *, concurrency: int = 2, timeout_s: float = 600
) -> Job:
    """One ``harbor run`` of its oracle agent over a copy of ``tasks`` (every Dockerfile's
    ``FROM``, compose services' too, mapped by ``base`` as the env maps it)."""
    from terminal_env._image import base_map, rewrite_dockerfile

    dataset = tmp / "dataset"
    shutil.copytree(tasks, dataset)
    mapping = base_map(base)
    for dockerfile in dataset.glob("*/environment/**/Dockerfile"):
        dockerfile.write_text(rewrite_dockerfile(dockerfile.read_text(), mapping))
    jobs = tmp / "jobs"
    run = ["run", "-p", str(dataset), "-a", "oracle", "-e", "docker", "-o", str(jobs), "--job-name", "client"]
    t0 = time.perf_counter()
    harbor(env, *run, "-n", str(concurrency), "-q", "-y", cwd=tmp, timeout_s=timeout_s)
    seconds = time.perf_counter() - t0
    rewards: dict[str, dict[str, float]] = {}
    errors: dict[str, Any] = {}
    results = list((jobs / "client").glob("*/result.json"))
    for result in results:
        trial = json.loads(result.read_text())
        name = trial["task_name"].rsplit("/", 1)[-1]
        rewards[name] = (trial.get("verifier_result") or {}).get("rewards") or {}
        if trial.get("exception_info"):
            errors[name] = trial["exception_info"]
    trials = [p.parent.name.lower() for p in results]
    return Job(tasks, base, rewards, errors, dataset, trials, seconds)


async def env_rewards(tasks: Path, base: str, name: str, builtin: bool) -> dict[str, float]:
    """The env's named rewards for task ``name`` of ``tasks`` played with its
    ``solution/solve.sh``; an error in the reward breakdown is a ``RuntimeError``."""
    script = (tasks / name / "solution" / "solve.sh").read_text()
    if builtin:  # a script as a file, as test_terminal_tasks.py plays them
        script = f"bash -s <<'__SOLVE__'\n{script}\n__SOLVE__"
    async with task_env(tasks, base) as env:
        done = await episode(env, name, script)
    breakdown = done.metadata["reward_breakdown"]
    if "error" in breakdown:
        raise RuntimeError(f"{name}: the env's verifier failed: {breakdown}")
    rewards = breakdown.get("rewards") or {"reward": breakdown["reward"]}  # checks.toml: one
    if done.reward != rewards.get("reward"):
        raise RuntimeError(f"{name}: reward {done.reward} is not the breakdown's {breakdown}")
    return dict(rewards)
