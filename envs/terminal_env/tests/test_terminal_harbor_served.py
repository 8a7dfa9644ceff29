"""A task with an image of its own through a real ``openenv serve terminal``: the Task API
lists the folder ``OPENENV_TERMINAL_TASKS`` names, a client plays the solution over the
wire and gets 1.0, ``/health`` stays up, and no container of the server is left once it
stops (real Docker; skipped only where no engine answers)."""

from __future__ import annotations

import httpx
import pytest
from _harbor_fixtures import TASKS, docker_base
from _terminal_fixtures import served
from terminal_env import MODELS, RunAction, SubmitAction

from openenv import AsyncEnvClient
from openenv.containers._docker import docker_client


def containers_of(pid: int) -> list[str]:
    """Session containers whose owner is the process ``pid``."""
    client = docker_client()
    try:
        # ignore_removed: another server on the engine may remove its own meanwhile
        label = {"label": "openenv.terminal.owner"}
        found = client.containers.list(all=True, filters=label, ignore_removed=True)
        return [c.id for c in found if f":{pid}:" in c.labels.get("openenv.terminal.owner", "")]
    finally:
        client.close()


pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]


async def test_a_served_image_task_is_listed_played_and_cleaned_up() -> None:
    base = docker_base()
    env = {"OPENENV_TERMINAL_TASKS": str(TASKS)}
    if base:
        env["OPENENV_TASK_BASE_IMAGES"] = base
    solve = (TASKS / "paid-totals" / "solution" / "solve.sh").read_text()
    with served("none", **env) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
            listed = (await http.post("/terminal_env/tasks", json={"split": "train"})).json()["tasks"]
            assert sorted(t["id"] for t in listed) == sorted(p.name for p in TASKS.iterdir() if p.is_dir())
            client = AsyncEnvClient(server.base_url, MODELS, timeout_s=300)
            try:
                first = await client.reset(task_id="paid-totals")
                assert "orders.json" in first.observation.instruction
                await client.step(RunAction(command=solve))
                assert containers_of(server.proc.pid)  # its session (and the pool's) while it runs
                done = await client.step(SubmitAction())
            finally:
                await client.close()
            assert done.reward == 1.0
            assert done.observation.metadata["reward_breakdown"]["source"] == "reward.txt"
            assert (await http.get("/health")).status_code == 200
        pid = server.proc.pid
    assert containers_of(pid) == [], "the stopped server left containers behind"
