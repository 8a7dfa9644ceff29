"""The image from ``openenv build envs/terminal_env`` runs an episode in a real container.

Skipped only when no Docker engine answers (the reason says so); a failed build fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from terminal_env import MODELS, RunAction, SubmitAction

from openenv import EnvClient
from tests._terminal_image import terminal_image

pytestmark = [pytest.mark.docker, pytest.mark.timeout(400)]


@pytest.fixture(scope="module")
def image() -> str:
    return terminal_image()  # built once per run, shared with tests/harness (tests/_terminal_image.py)


@pytest.fixture(scope="module")
def env(image: str) -> Iterator[Any]:
    """One container for both tests (each starts its own episode with reset)."""
    options = {"cpus": 1, "memory": "1g", "start_timeout_s": 120}
    with EnvClient.from_docker_image(image, MODELS, provider_options=options, timeout_s=60) as client:
        yield client


def test_an_episode_runs_in_the_container(env: Any) -> None:
    meta = httpx.get(f"{env.base_url}/metadata", timeout=10).json()
    assert meta["sandbox"]["level"] == "rlimits"  # no user namespaces under Docker's defaults
    assert meta["sandbox"]["network"] is False  # a seccomp filter takes it away instead
    assert meta["sandbox"]["network_block"] == "seccomp"
    first = env.reset(task_id="create-hello")
    assert "Hello, terminal!" in first.observation.instruction
    work = "id -u; echo 'Hello, terminal!' > hello.txt; cd /tmp; pwd"
    obs = env.step(RunAction(command=work)).observation
    assert obs.output.split() == ["1000", "/tmp"]
    timed = env.step(RunAction(command="sleep 30", timeout_s=0.5)).observation
    assert timed.timed_out
    assert timed.exit_code == 130
    net = "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 8000), 2)\""
    assert "PermissionError" in env.step(RunAction(command=net)).observation.output
    done = env.step(SubmitAction())
    assert done.reward == 1.0
    assert done.done


def test_a_git_task_is_solved_in_the_container(env: Any) -> None:
    """The image has git (pyproject.toml's [tool.openenv.build] apt), so the git tasks run."""
    env.reset(task_id="git-first-commit")
    who = "-c user.name=agent -c user.email=agent@example.com"  # as the reference solution
    solve = f"cd repo && git init -q && git add -A && git {who} commit -qm 'initial commit'"
    assert env.step(RunAction(command=solve)).observation.exit_code == 0
    result = env.step(SubmitAction())
    assert result.reward == 1.0, result.observation.metadata
