"""A task's ``[agent] timeout_sec`` lifts the env's default per-command cap (``max_timeout_s``
not given) to the time left to that limit (a Terminal-Bench solve or a long build runs as one command, as in
Harbor); the step request's own deadline still bounds it. Sandboxed task, no Docker."""

from __future__ import annotations

import os
from pathlib import Path

from _terminal_fixtures import run
from terminal_env import TerminalEnv

LONG = "sleep 1.5; echo done"
#: for the cut ones: far past their bound (0.5 s, 1 s) and well inside the command's own
#: 10 s, so a loaded host's lag cannot turn a cut into a finish or a finish into a cut
SLOW = "sleep 5; echo done"


def _task(tasks: Path, agent_timeout_s: float | None) -> str:
    name = f"cap-{agent_timeout_s or 'none'}".replace(".", "-")
    path = tasks / name
    (path / "tests").mkdir(parents=True)
    agent = f"\n[agent]\ntimeout_sec = {agent_timeout_s}\n" if agent_timeout_s else ""
    (path / "task.toml").write_text(f"[verifier]\ntimeout_sec = 30.0\n{agent}")
    (path / "instruction.md").write_text("Write `done` into `out.txt`.\n")
    (path / "tests/checks.toml").write_text('[[check]]\nname = "out"\nrun = "cat out.txt"\nstdout = "done"\n')
    return name


async def test_the_agent_timeout_lifts_the_command_cap(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    limited, plain = _task(tmp_path, 60.0), _task(tmp_path, None)
    env = TerminalEnv(sandbox="none", tasks_dir=str(tmp_path), pool_size=1)  # the default cap...
    assert env.task_lifts_cap
    env.max_timeout_s = 0.5  # ...made short enough to see it lifted
    try:
        await env.reset(options={"task_id": limited})
        lifted = await env.step(run(LONG, timeout_s=10))
        assert not lifted.timed_out, lifted.output
        assert "done" in lifted.output
        # the step request's deadline still bounds it: 2 s less the wrap-up (half of it) is 1 s
        bounded = await env.step(run(SLOW, timeout_s=10), timeout_s=2.0)
        assert bounded.timed_out
        await env.reset(options={"task_id": plain})  # no agent limit: max_timeout_s as before
        capped = await env.step(run(SLOW, timeout_s=10))
        assert capped.timed_out
    finally:
        await env.close()


async def test_a_cap_the_operator_gave_is_kept_under_an_agent_timeout(tmp_path: Path) -> None:
    """``max_timeout_s`` given (as the schemathesis fuzz gives 5 s) is a hard cap: a task's
    600 s agent limit lifted it, and a fuzzed read or command waited minutes."""
    os.chmod(tmp_path, 0o755)
    limited = _task(tmp_path, 60.0)
    env = TerminalEnv(sandbox="none", tasks_dir=str(tmp_path), max_timeout_s=0.5, pool_size=1)
    try:
        await env.reset(options={"task_id": limited})
        capped = await env.step(run(SLOW, timeout_s=10))
        assert capped.timed_out
        assert "done" not in capped.output
    finally:
        await env.close()
