"""Shared helpers for the tests of tasks with an image of their own (imported by plain name)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from terminal_env import RunAction, SubmitAction, TerminalEnv, TerminalObservation

from openenv._exceptions import ProviderError

TASKS = Path(__file__).with_name("harbor_tasks")
LOCAL_BASE_IMAGE = "openenv-local/python:3.11-bookworm"


def docker_base() -> str:
    """``python:3.11-slim`` mapped to the offline local base where the engine has it;
    skips (with the reason) where no Docker engine answers."""
    from openenv.containers._docker import docker_client

    try:
        client = docker_client()
    except ProviderError as exc:
        pytest.skip(f"tasks with an image of their own need a Docker engine: {exc}")
    try:
        local = bool(client.images.list(name=LOCAL_BASE_IMAGE))
    finally:
        client.close()
    return f"python:3.11-slim={LOCAL_BASE_IMAGE}" if local else ""


def copy_task(name: str, dest: Path, *, toml_extra: str = "", new_name: str | None = None) -> Path:
    """A copy of a test task under ``dest``, ``toml_extra`` appended to its task.toml."""
    out = dest / (new_name or name)
    shutil.copytree(TASKS / name, out)
    if toml_extra:
        with (out / "task.toml").open("a") as f:
            f.write("\n" + toml_extra)
    return out


@asynccontextmanager
async def task_env(tasks_dir: Path, base: str, **kw: Any) -> AsyncIterator[TerminalEnv]:
    env = TerminalEnv(sandbox="none", tasks_dir=str(tasks_dir), base_images=base, pool_size=0, **kw)
    try:
        yield env
    finally:
        await env.close()


async def sh(env: TerminalEnv, command: str, timeout_s: float = 60) -> TerminalObservation:
    return await env.step(RunAction(command=command, timeout_s=timeout_s))


async def episode(env: TerminalEnv, task_id: str, *commands: str) -> TerminalObservation:
    """Reset to ``task_id``, run ``commands`` in the shell, submit; the submit's observation."""
    await env.reset(options={"task_id": task_id})
    for command in commands:
        await sh(env, command)
    return await env.step(SubmitAction())
