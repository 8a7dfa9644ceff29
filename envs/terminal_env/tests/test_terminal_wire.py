"""The action union on the wire: every shape a client sends, and the README's example."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _terminal_fixtures import served
from terminal_env import MODELS, ReadAction, RunAction, TerminalAction

from openenv import EnvClient
from openenv._exceptions import ValidationFailed

README = Path(__file__).parents[1] / "README.md"


@pytest.fixture(scope="module")
def replica() -> Iterator[Any]:
    with served("none") as server:
        yield server


def test_every_wire_shape_steps(replica: Any) -> None:
    with EnvClient(replica.base_url, MODELS, timeout_s=60) as env:
        env.reset(free_shell=True)
        assert env.step({"command": "echo tagless"}).observation.output == "tagless\n"
        assert env.step({"type": "run", "command": "echo tagged"}).observation.output == "tagged\n"
        assert env.step(RunAction(command="echo member")).observation.output == "member\n"
        assert env.step(TerminalAction(command="echo union")).observation.output == "union\n"
        env.step({"type": "send_keys", "keys": "cat", "enter": True})
        typed = env.step({"type": "send_keys", "keys": "typed", "enter": True})
        assert "typed" in typed.observation.output
        assert env.step({"type": "interrupt"}).observation.exit_code == 130
        env.step({"type": "write_file", "path": "f.txt", "content": "x\n"})
        assert env.step({"type": "read_file", "path": "f.txt"}).observation.output == "x\n"
        assert env.step(ReadAction(timeout_s=0.2)).observation.output == ""
        with pytest.raises(ValidationFailed, match="command"):
            env.step({"type": "run"})
        with pytest.raises(ValidationFailed, match="keys"):
            env.step({"type": "read", "keys": "q"})
        assert env.step({"command": "echo still here"}).observation.output == "still here\n"


def test_the_readme_example_runs(replica: Any, capsys: pytest.CaptureFixture[str]) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    exec(code.replace("http://127.0.0.1:8000", replica.base_url), {})
    printed = capsys.readouterr().out
    assert "Count the lines of `app.log` that contain `ERROR`" in printed
    assert "1.0 {" in printed  # the reward, then the breakdown


@pytest.mark.parametrize("deadline", [0.001, 1.0])
def test_a_step_deadline_is_kept_by_the_env(replica: Any, deadline: float) -> None:
    """A step's ``timeout_s`` (RFC 0001 section 4.5) bounds the command's wait: past it the
    step is an observation with what ran and ``timed_out``, by the deadline, not a
    ``DEADLINE_EXCEEDED`` (it was, from a 1 ms deadline up); the shell goes on. At 1 ms the
    Ctrl-C can come as bash starts the command and miss it (1 of 8 full runs, two suites at
    once): it is sent again (test_terminal_ctrl_c.py)."""
    with EnvClient(replica.base_url, MODELS, timeout_s=60) as env:
        env.reset(free_shell=True)
        slow = RunAction(command="echo started; sleep 30", timeout_s=60)
        obs = env.step(slow, timeout_s=deadline).observation
        assert obs.timed_out is True
        assert obs.duration_s < max(deadline, 0.5) + 2.0  # Ctrl-C's answer: the wrap-up kept back
        if deadline >= 1.0:
            assert obs.output.startswith("started")
        assert env.step({"command": "echo after"}).observation.output == "after\n"
