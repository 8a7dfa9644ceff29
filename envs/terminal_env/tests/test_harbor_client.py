"""Harbor itself as a client of this env's task format, both ways, on real Docker.

1. Harbor (``harbor run``, its oracle agent, its Docker environment) runs image tasks
   of ``harbor_tasks/``, copies of some whose ``solve.sh`` is a wrong answer, and a task
   made by Harbor's own ``harbor task init``; the terminal env runs the same folders with
   the same solutions; the rewards each gives per task must be equal (the named rewards
   of ``reward.json`` included), 1.0 for the oracles, less for the wrong ones.
   In CI the job runs two of the ten test tasks (one with a compose service, one with
   named rewards) and one wrong answer (four trials with the init task, two waves of
   two; every task both ways: bench/harbor_all.py); ``OPENENV_HARBOR_TASKS=all`` runs all
   ten, each with its wrong answer, and ``OPENENV_HARBOR_TASKS=builtin`` the 30 built-in
   tasks, each with its first fake of test_terminal_task_fakes.py as the wrong answer
   (docs/harbor.md).
2. The ``harbor task init`` task (its template filled in minimally) is served by this env
   and its oracle scores 1.0, doing nothing 0.0.

One Harbor job over the five tasks is shared by the assertions (``_harbor_job.py``, which
bench/harbor_all.py also runs over every task). Offline, Harbor builds from a copy of the
tasks whose ``FROM`` lines are mapped by this env's own mapping to the local base
(``openenv-local/python:3.11-bookworm``); the env maps the originals.

Needs the Harbor venv (``.venv-harbor``, made by ``scripts/setup.d/56-harbor.sh``, with a
``docker compose`` v2 plugin where the Docker CLI lacks one) and a Docker engine: without
either the tests skip with the reason, and under ``CI=true`` they fail instead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from _harbor_fixtures import TASKS, task_env
from _harbor_job import (
    HARBOR,
    HarborUnavailable,
    Job,
    engine_base,
    env_rewards,
    harbor,
    harbor_env,
    run_job,
    write_tasks,
)
from terminal_env import SubmitAction
from terminal_env._tasks import TASKS_DIR, task_dirs

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

INIT_TASK = "hello-harbor"
#: The test tasks Harbor runs in CI (with their oracles) and those it also runs with a
#: wrong answer; OPENENV_HARBOR_TASKS=all: every task, both ways.
CI_ORACLES = ("api-count", "word-counts")  # four trials with the two below: two waves of -n 2
CI_WRONG = ("word-counts",)
MODE = os.environ.get("OPENENV_HARBOR_TASKS", "")
BUILTIN = MODE == "builtin"
SOURCE = TASKS_DIR if BUILTIN else TASKS
if MODE in ("all", "builtin"):
    ORACLES = WRONGS = tuple(p.name for p in task_dirs(SOURCE))
else:
    ORACLES, WRONGS = CI_ORACLES, CI_WRONG
HARBOR_TIMEOUT_S = 600 if len(ORACLES) < 10 else 3600


def unavailable(reason: str) -> None:
    """Skip with ``reason``; under ``CI=true`` the test fails instead (it must run there)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: the Harbor client tests must run, not skip ({reason})")
    pytest.skip(reason)


def init_task(env: dict[str, str], dest: Path) -> Path:
    """A task from Harbor's ``harbor task init`` template, filled in minimally: the input
    in the image, the solution, and a test that checks the answer."""
    init = ["task", "init", f"openenv/{INIT_TASK}", "-p", str(dest), "--description", "add two numbers"]
    harbor(env, *init, "--no-pytest", "--verifier-mode", "shared", cwd=dest)
    task = dest / INIT_TASK
    (task / "instruction.md").write_text("Write the sum of the numbers in /app/input.txt to /app/sum.txt.\n")
    with (task / "environment" / "Dockerfile").open("a") as f:
        f.write("\nRUN echo '3 4' > /app/input.txt\n")
    with (task / "solution" / "solve.sh").open("a") as f:
        f.write("\nawk '{print $1 + $2}' /app/input.txt > /app/sum.txt\n")
    with (task / "tests" / "test.sh").open("a") as f:
        f.write(
            '\nif [ "$(cat /app/sum.txt 2>/dev/null)" = 7 ]; then\n'
            "  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n"
        )
    return task


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Job:
    tmp = tmp_path_factory.mktemp("harbor")
    try:
        env = harbor_env(tmp)
        if BUILTIN:  # the git tasks' base is made from the terminal image (_harbor_job.git_base)
            from tests._terminal_image import terminal_image

            terminal_image()  # built here when no earlier test of this run built it
        base = engine_base(BUILTIN)
    except HarborUnavailable as exc:
        unavailable(str(exc))
        raise
    tasks = tmp / "tasks"
    tasks.mkdir()
    write_tasks(tasks, SOURCE, ORACLES, WRONGS, BUILTIN)
    init_task(env, tasks)
    return run_job(tmp, tasks, base, env, timeout_s=HARBOR_TIMEOUT_S)


async def our_rewards(job: Job, name: str) -> dict[str, float]:
    """The env's named rewards for ``name`` played with its ``solution/solve.sh``."""
    return await env_rewards(job.tasks, job.base, name, BUILTIN)


def test_harbor_ran_every_task_without_an_error(job: Job) -> None:
    names = sorted(p.name for p in job.tasks.iterdir())
    assert sorted(job.rewards) == names, (job.rewards, job.errors)
    assert job.errors == {}
    # Harbor removed what its compose projects started and built (--delete, its default).
    from openenv.containers._docker import docker_client

    client = docker_client()
    try:
        left = [
            c.name
            for c in client.containers.list(  # another run's, removed meanwhile: skipped
                all=True, filters={"label": "com.docker.compose.project"}, ignore_removed=True
            )
            if str(job.dataset) in c.labels.get("com.docker.compose.project.working_dir", "")
        ]
        # one listing call (images.list() inspects each: another run's image removed meanwhile raised)
        images = [tag for image in client.api.images() for tag in image.get("RepoTags") or ()]
    finally:
        client.close()
    assert left == []
    assert [tag for tag in images if tag.startswith(tuple(f"{t}__" for t in job.trials))] == []
    assert len(job.trials) == len(names)


@pytest.mark.parametrize("name", [*ORACLES, INIT_TASK])
async def test_harbor_and_the_env_give_the_oracle_one(job: Job, name: str) -> None:
    ours = await our_rewards(job, name)
    assert job.rewards[name]["reward"] == 1.0, job.rewards[name]
    assert ours == job.rewards[name]


@pytest.mark.parametrize("name", WRONGS)
async def test_a_wrong_solution_scores_less_in_both_and_the_same(job: Job, name: str) -> None:
    ours = await our_rewards(job, f"{name}-wrong")
    theirs = job.rewards[f"{name}-wrong"]
    assert theirs["reward"] < 1.0, theirs
    assert ours == theirs
    if name == "word-counts":  # named rewards: one count off for every word
        assert theirs == {"exists": 1.0, "json_object": 1.0, "counts": 0.0, "reward": 0.0}


async def test_the_env_serves_harbors_init_template(job: Job) -> None:
    """The folder ``harbor task init`` wrote (its task.toml untouched) is served: doing
    nothing scores 0, the oracle 1 (above)."""
    toml = (job.tasks / INIT_TASK / "task.toml").read_text()
    assert 'environment_mode = "shared"' in toml
    assert 'network_mode = "public"' in toml
    async with task_env(job.tasks, job.base) as env:
        obs = await env.reset(options={"task_id": INIT_TASK})
        assert obs.cwd == "/app"
        idle = await env.step(SubmitAction())
    assert idle.reward == 0.0, idle.metadata


def test_harbors_default_template_with_a_separate_verifier_is_refused(tmp_path: Path) -> None:
    """``harbor task init``'s default runs the tests in a container of their own
    (``environment_mode = "separate"``, ``tests/Dockerfile``): not served, and said why."""
    if not HARBOR.exists():
        unavailable(f"the Harbor client tests need {HARBOR} (run scripts/setup.d/56-harbor.sh)")
    from terminal_env._tasks import HarborTaskSet

    env = dict(os.environ, HARBOR_TELEMETRY="0")
    harbor(env, "task", "init", "openenv/separate", "-p", str(tmp_path), "--description", "x", cwd=tmp_path)
    assert (tmp_path / "separate" / "tests" / "Dockerfile").is_file()
    tasks = HarborTaskSet(tmp_path)
    tasks.load()
    assert tasks.num_tasks() == 0
    assert "environment_mode = 'separate'" in tasks.broken["separate"], tasks.broken


@pytest.mark.parametrize(
    ("meta", "says"),
    [
        ({"verifier": {"environment": {"docker_image": "x"}}}, "environment_mode = 'separate'"),
        ({"verifier": {"environment_mode": "elsewhere"}}, "expected 'shared' or 'separate'"),
        ({"environment": {"os": "windows"}}, "os = 'windows'"),
    ],
)
def test_harbor_fields_this_env_cannot_honour_are_refused(meta: dict[str, Any], says: str) -> None:
    from terminal_env._harbor import ImageSettings, TaskFormatError

    with pytest.raises(TaskFormatError, match=re.escape(says)):
        ImageSettings.from_toml(meta)
    shared = {"verifier": {"environment_mode": "shared"}, "environment": {"os": "linux"}}
    assert ImageSettings.from_toml(shared).network is False
