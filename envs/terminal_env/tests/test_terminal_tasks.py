"""The shipped tasks: their layout, scoring and task choice. That every reference solution
scores 1.0 and an empty attempt less is test_terminal_task_fakes.py's (one run of each
solution serves both files)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _terminal_fixtures import LEVELS, run
from terminal_env import SubmitAction, TerminalEnv
from terminal_env._tasks import TASKS_DIR, HarborTaskSet, TerminalTask, task_dirs
from terminal_env._verifier import score

from openenv.tasks import TaskNotFound

TASKS = task_dirs(TASKS_DIR)
LEVEL = LEVELS[-1]  # the strongest level this machine supports


def test_at_least_25_tasks_in_harbor_layout() -> None:
    assert len(TASKS) >= 25
    categories = {TerminalTask.from_dir(p).category for p in TASKS}
    assert {"files", "text", "git", "processes", "scripting", "bugfix"} <= categories
    for path in TASKS:
        assert (path / "solution" / "solve.sh").is_file(), path


def test_every_task_is_in_harbors_format_and_still_runs_sandboxed() -> None:
    """Each built-in task has Harbor's files (its Dockerfile and test.sh as
    _harbor_files.py writes them, so they cannot drift from checks.toml's runner) and
    is still served sandboxed: no image, scored by its checks."""
    from terminal_env._harbor_files import harbor_files

    for path in TASKS:
        for name in ("task.toml", "instruction.md", "tests/test.sh", "solution/solve.sh"):
            assert (path / name).is_file(), (path.name, name)
        task = TerminalTask.from_dir(path)
        for rel, text in harbor_files(task).items():
            # else: python -m terminal_env._harbor_files
            assert (path / rel).read_text() == text, (path.name, rel)
        assert task.image is None, path.name
        assert task.checks, path.name


async def test_submit_reports_a_breakdown_and_ends_the_episode() -> None:
    env = TerminalEnv(sandbox=LEVEL)
    try:
        obs = await env.reset(options={"task_id": "create-hello"})
        assert "Hello, terminal!" in obs.instruction
        assert obs.prompt.startswith(obs.instruction)
        await env.step(run("echo 'Hello, terminal!' > hello.txt; echo extra >> hello.txt"))
        done = await env.step(SubmitAction())
        breakdown = done.metadata["reward_breakdown"]
        assert done.done
        assert breakdown["source"] == "checks"
        assert (breakdown["tests_passed"], breakdown["tests_total"]) == (1, 3)
        assert [t["passed"] for t in breakdown["tests"]] == [True, False, False]
        assert done.reward == pytest.approx(1 / 3)
        with pytest.raises(RuntimeError, match="reset first"):
            await env.step(run("ls"))
    finally:
        await env.close()


async def test_the_episode_is_scored_at_its_step_limit() -> None:
    env = TerminalEnv(sandbox=LEVEL)
    try:
        await env.reset(options={"task_id": "create-hello", "max_steps": 2})
        first = await env.step(run("echo 'Hello, terminal!' > hello.txt"))
        assert not first.done
        last = await env.step(run("true"))
        assert last.done
        assert last.truncated
        assert last.reward == 1.0
    finally:
        await env.close()


async def test_the_agent_processes_are_stopped_before_the_tests_run() -> None:
    env = TerminalEnv(sandbox=LEVEL)
    try:
        await env.reset(options={"task_id": "create-hello"})
        await env.step(run("(while :; do echo tick >> ticks; sleep 0.02; done) &"))
        await env.step(run("sleep 0.2; echo 'Hello, terminal!' > hello.txt"))
        done = await env.step(SubmitAction())
        assert done.reward == 1.0
        assert env._sandbox is not None
        ticks = env._sandbox.workdir / "ticks"
        before = ticks.read_text().count("tick")
        await asyncio.sleep(0.3)
        assert ticks.read_text().count("tick") == before > 0
    finally:
        await env.close()


def test_task_choice_by_seed_id_and_index() -> None:
    tasks = HarborTaskSet(TASKS_DIR).load()
    assert tasks.num_tasks() == len(TASKS)
    assert tasks.pick(seed=3).id == tasks.pick(seed=3).id
    assert tasks.pick({"task_id": "top-ips"}).data["category"] == "text"
    assert tasks.pick({"index": 0}).id == TASKS[0].name
    with pytest.raises(TaskNotFound):
        tasks.pick({"task_id": "no-such-task"})


def test_score_sources(tmp_path: Path) -> None:
    reward = tmp_path / "reward.txt"
    assert score(b"ok 1 - a\nnot ok 2 - b\nok 3\n1..3\n", 1, reward)[:2] == (2 / 3, "tap")
    assert score(b"", 0, reward)[:2] == (1.0, "exit_code")
    assert score(b"", 1, reward)[:2] == (0.0, "exit_code")
    reward.write_text("0.25\n")
    assert score(b"ok 1\n", 0, reward)[:2] == (0.25, "reward.txt")
    reward.write_text("7")
    assert score(b"", 0, reward)[0] == 1.0
