"""A task's own ``[environment.healthcheck]`` (Harbor's task.toml): read with its
defaults, run in the task's container until it passes before the session starts, and a
check that never passes is a one-line error for that reset, its container removed.

The loop's rules are checked with a scripted check (no Docker, no clock: the start
period outlasts the test); the container runs use real Docker and the ``word-counts``
test task's image (built once, cached by content), skipped only where no engine answers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from _harbor_fixtures import copy_task, docker_base, sh, task_env
from terminal_env._compose_health import wait_task_ready
from terminal_env._harbor import ImageSettings, TaskFormatError, TaskHealthcheck

from openenv._exceptions import ExecutionError


def test_the_table_is_read_with_harbors_defaults() -> None:
    got = ImageSettings.from_toml({"environment": {"healthcheck": {"command": "true"}}}).healthcheck
    assert got == TaskHealthcheck(
        "true", interval_s=5.0, timeout_s=30.0, start_period_s=0.0, start_interval_s=5.0, retries=3
    )
    table = {
        "command": "pg_isready",
        "interval_sec": 1,
        "timeout_sec": 2.5,
        "start_period_sec": 10,
        "start_interval_sec": 0.5,
        "retries": 7,
    }
    assert TaskHealthcheck.from_toml(table) == TaskHealthcheck("pg_isready", 1.0, 2.5, 10.0, 0.5, 7)
    assert ImageSettings.from_toml({}).healthcheck is None
    for bad, says in (
        ({}, "command = None: expected a shell command"),
        ({"command": "true", "retries": 0}, "retries = 0"),
        ({"command": "true", "interval_sec": "5s"}, "interval_sec = '5s': expected a number of seconds"),
        ({"command": "true", "every": 1}, "every: not a healthcheck field"),
    ):
        with pytest.raises(TaskFormatError, match=says):
            ImageSettings.from_toml({"environment": {"healthcheck": bad}})


def _script(codes: list[int]) -> tuple[list[str], Callable[[str, float], tuple[int, str]]]:
    calls: list[str] = []

    def check_once(command: str, timeout_s: float) -> tuple[int, str]:
        calls.append(command)
        return codes[len(calls) - 1], f"try {len(calls)}"

    return calls, check_once


def test_it_runs_until_it_passes_and_fails_after_retries_in_a_row() -> None:
    calls, check_once = _script([1, 1, 0])
    wait_task_ready(check_once, TaskHealthcheck("probe", interval_s=0, retries=3))
    assert calls == ["probe"] * 3
    calls, check_once = _script([1, 1, 1, 0])
    with pytest.raises(RuntimeError, match=r"failed 3 times in a row \(the last exited 1: try 3\)"):
        wait_task_ready(check_once, TaskHealthcheck("probe", interval_s=0, retries=3))
    assert len(calls) == 3


def test_failures_in_the_start_period_do_not_count() -> None:
    calls, check_once = _script([1] * 10 + [0])
    check = TaskHealthcheck("probe", start_period_s=3600, start_interval_s=0, retries=1)
    wait_task_ready(check_once, check)
    assert len(calls) == 11


#: Passes on its third run: it counts its runs in the container.
THIRD_TIME = """
[environment.healthcheck]
command = "n=$(cat /tmp/checks 2>/dev/null || echo 0); echo $((n + 1)) > /tmp/checks; [ $((n + 1)) -ge 3 ]"
interval_sec = 0.1
retries = 5
"""
NEVER = """
[environment.healthcheck]
command = "echo not ready yet; exit 3"
interval_sec = 0.1
retries = 2
"""


@pytest.mark.docker
@pytest.mark.timeout(300)
async def test_the_check_passes_before_the_session_starts_and_a_failing_one_fails_that_reset(
    tmp_path: Path,
) -> None:
    base = docker_base()
    copy_task("word-counts", tmp_path, new_name="ready-third-time", toml_extra=THIRD_TIME)
    copy_task("word-counts", tmp_path, new_name="never-ready", toml_extra=NEVER)
    async with task_env(tmp_path, base, image_pool_size=0) as env:
        await env.reset(options={"task_id": "ready-third-time"})
        assert (await sh(env, "cat /tmp/checks")).output.strip() == "3"  # ran to its pass, then stopped
        with pytest.raises(ExecutionError) as caught:
            await env.reset(options={"task_id": "never-ready"})
        message = str(caught.value)
        assert message == (
            "task 'never-ready': its healthcheck failed 2 times in a row (the last exited 3: not ready yet)"
        )
        assert _containers_of("never-ready", env.resources.images.owner) == []  # removed at once
        await env.reset(options={"task_id": "ready-third-time"})  # the set is still served


def _containers_of(task_id: str, owner: str) -> list[str]:
    """This server's containers of ``task_id``, stopped ones too."""
    from terminal_env._container import LABEL, OWNER_LABEL

    from openenv.containers._docker import docker_client

    client = docker_client()
    try:
        labels = [f"{LABEL}={task_id}", f"{OWNER_LABEL}={owner}"]
        found = client.containers.list(all=True, filters={"label": labels}, ignore_removed=True)
        return [c.name for c in found]
    finally:
        client.close()
