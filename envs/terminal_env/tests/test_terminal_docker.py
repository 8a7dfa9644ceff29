"""The image from ``openenv build envs/terminal_env`` runs an episode in a real container.

Skipped only when no Docker engine answers (the reason says so); a failed build fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from terminal_env import MODELS, RunAction, SubmitAction

from openenv import EnvClient
from openenv._exceptions import ProviderError

pytestmark = [pytest.mark.docker, pytest.mark.timeout(400)]

ENV_DIR = Path(__file__).resolve().parents[1]
LOCAL_BASE_IMAGE = "openenv-local/python:3.11-bookworm"


@pytest.fixture(scope="module")
def image() -> str:
    from openenv.containers import build_env_image
    from openenv.containers._docker import docker_client

    try:
        client = docker_client()
    except ProviderError as exc:
        pytest.skip(f"the image test needs a Docker engine: {exc}")
    base = os.environ.get("OPENENV_BASE_IMAGE") or (
        LOCAL_BASE_IMAGE if client.images.list(name=LOCAL_BASE_IMAGE) else "python:3.11-slim"
    )
    lines: list[str] = []
    try:
        tag = build_env_image(ENV_DIR, base_image=base, client=client, progress=lines.append)
        if _digest_in(client, tag) != local_digest():  # the shared base has an older openenv
            tag = build_env_image(
                ENV_DIR, base_image=base, client=client, progress=lines.append, rebuild_base=True
            )
    except ProviderError as exc:
        pytest.fail(f"building the terminal image on {base} failed: {exc}\n" + "\n".join(lines[-30:]))
    finally:
        client.close()
    return tag  # (not compared again: this tree may have changed meanwhile)


#: A digest of the openenv package's sources: the base image is reused by tag alone, so
#: compare what it holds with this tree's and rebuild it when they differ.
DIGEST_CODE = (
    "import hashlib, pathlib, openenv\n"
    "root = pathlib.Path(openenv.__file__).parent\n"
    "h = hashlib.sha256()\n"
    "for p in sorted(root.rglob('*.py')):\n"
    "    h.update(str(p.relative_to(root)).encode() + p.read_bytes())\n"
    "print(h.hexdigest())\n"
)


def local_digest() -> str:
    done = subprocess.run([sys.executable, "-c", DIGEST_CODE], capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


def _digest_in(client: Any, tag: str) -> str:
    import docker.errors

    try:
        out = client.containers.run(tag, ["python3", "-c", DIGEST_CODE], remove=True, network_mode="none")
    except docker.errors.ContainerError:
        return ""
    return bytes(out).decode().strip()


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
