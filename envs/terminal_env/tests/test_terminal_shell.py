"""The persistent shell: state across steps, timeouts, interrupts, restarts, big output."""

from __future__ import annotations

import base64
import time

import pytest
from _terminal_fixtures import LEVELS, sh, terminal
from jsonschema import Draft202012Validator
from pydantic import ValidationError
from terminal_env import (
    MODELS,
    InterruptAction,
    ReadAction,
    ReadFileAction,
    RestartAction,
    RunAction,
    SendKeysAction,
    SubmitAction,
    TerminalAction,
    WriteFileAction,
)
from terminal_env._shell import quote
from terminal_env._text import clean, clip


@pytest.fixture(params=LEVELS)
def level(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_cwd_variables_and_jobs_persist(level: str) -> None:
    async with terminal(level) as env:
        first = await sh(env, "mkdir -p d/e && cd d/e && export X=41 && Y=$((X + 1))")
        assert first.exit_code == 0
        obs = await sh(env, 'echo "$X $Y"; pwd')
        assert obs.output.split() == ["41", "42", obs.cwd]
        assert obs.cwd.endswith("/d/e")
        await sh(env, "sleep 30 &")
        assert "sleep 30" in (await sh(env, "jobs")).output
        state = await env.state()
        assert state.cwd == obs.cwd
        assert state.step_count == 4


async def test_exit_codes_and_syntax_errors(level: str) -> None:
    async with terminal(level) as env:
        assert (await sh(env, "false")).exit_code == 1
        assert (await sh(env, "(exit 7)")).exit_code == 7
        broken = await sh(env, "echo 'unterminated")  # must not wedge the shell
        assert broken.exit_code == 2
        assert "unexpected EOF" in broken.output
        assert (await sh(env, "echo ok")).output == "ok\n"


async def test_timeout_interrupts_the_command(level: str) -> None:
    async with terminal(level) as env:
        await sh(env, "cd /tmp && V=kept")
        start = time.monotonic()
        obs = await sh(env, "echo started; sleep 30", timeout_s=0.5)
        assert time.monotonic() - start < 5
        assert obs.timed_out
        assert obs.exit_code == 130  # Ctrl-C reached the foreground command
        assert not obs.session_restarted
        assert "started" in obs.output
        assert (await sh(env, 'echo "$V"; pwd')).output == "kept\n/tmp\n"


async def test_a_command_that_ignores_ctrl_c_gets_the_shell_restarted(level: str) -> None:
    async with terminal(level) as env:
        await sh(env, "V=lost")
        obs = await sh(env, "trap '' INT; sleep 60", timeout_s=0.3)
        assert obs.timed_out
        assert obs.session_restarted
        assert obs.exit_code is None
        assert "restarted" in obs.output
        assert (await sh(env, 'echo "[$V]"')).output == "[]\n"
        assert (await env.state()).restarts == 1


async def test_interrupt_restart_and_exit(level: str) -> None:
    async with terminal(level) as env:
        await sh(env, "echo hi > keep.txt")
        await env.step(SendKeysAction(keys="sleep 60\n"))
        obs = await env.step(InterruptAction())
        assert obs.exit_code == 130
        restarted = await env.step(RestartAction())
        assert restarted.session_restarted
        exited = await sh(env, "exit 3")
        assert exited.session_restarted
        assert (await sh(env, "cat keep.txt")).output == "hi\n"  # files survive restarts


async def test_large_output_keeps_head_and_tail(level: str) -> None:
    async with terminal(level, output_limit=2000) as env:
        obs = await sh(env, "seq 1 200000")
        assert obs.exit_code == 0
        assert obs.output.startswith("1\n2\n3\n")
        assert obs.output.endswith("199999\n200000\n")
        assert obs.omitted_bytes > 1_000_000
        assert len(obs.output) < 2200


async def test_endless_output_is_bounded(level: str) -> None:
    async with terminal(level, output_limit=1000) as env:
        obs = await sh(env, "yes", timeout_s=1.0)
        assert obs.timed_out
        assert obs.output.startswith("y\ny\n")
        assert len(obs.output) < 1200
        # left running in the background, it is not read past the buffer: no memory growth
        await sh(env, "yes > /dev/tty &")
        await env.step(ReadAction(timeout_s=0.5))
        shell = env._shell
        assert shell is not None
        assert len(shell._out) <= shell.read_limit
        assert (await sh(env, "kill %1; echo done")).output.endswith("done\n")


async def test_send_keys_drives_a_repl(level: str) -> None:
    async with terminal(level) as env:
        await env.step(SendKeysAction(keys="python3 -q\n", timeout_s=2))
        obs = await env.step(SendKeysAction(keys="print(6 * 7)", enter=True, timeout_s=2))
        assert "42" in obs.output
        back = await env.step(SendKeysAction(keys="exit()\n", timeout_s=2))
        assert back.exit_code == 0  # the shell prompt came back
        assert (await sh(env, "echo shell")).output == "shell\n"


async def test_read_returns_background_output(level: str) -> None:
    async with terminal(level) as env:
        await sh(env, "(sleep 0.3; echo late) &")
        obs = await env.step(ReadAction(timeout_s=2))
        assert "late" in obs.output


async def test_write_and_read_files_without_quoting(level: str) -> None:
    async with terminal(level) as env:
        await sh(env, "mkdir sub && cd sub")
        text = "quotes ' \" $HOME `x` \\ and unicode é\n" * 1000
        wrote = await env.step(WriteFileAction(path="deep/a.txt", content=text, mode=0o600))
        assert wrote.exit_code == 0
        assert (await sh(env, "stat -c %a deep/a.txt")).output == "600\n"
        read = await env.step(ReadFileAction(path="deep/a.txt"))
        assert read.output == text
        blob = bytes(range(256)) * 10000  # 2.5 MB binary
        b64 = base64.b64encode(blob).decode()
        await env.step(WriteFileAction(path="b.bin", content=b64, encoding="base64"))
        back = await env.step(ReadFileAction(path="b.bin", encoding="base64"))
        assert base64.b64decode(back.output) == blob
        missing = await env.step(ReadFileAction(path="nope"))
        assert missing.exit_code == 1
        assert "No such file" in missing.output


def test_actions_are_a_tagged_union_with_run_by_default() -> None:
    assert TerminalAction.model_validate({"command": "ls"}).root == RunAction(command="ls")
    assert TerminalAction.model_validate({"type": "run", "command": "ls"}).root == RunAction(command="ls")
    keys = TerminalAction.model_validate({"type": "send_keys", "keys": "q"}).root
    assert keys == SendKeysAction(keys="q")
    assert TerminalAction(type="submit").root == SubmitAction()  # keywords build a member
    # the tag survives a client's exclude_unset dump, of a member or of the union
    assert RunAction(command="ls").model_dump(exclude_unset=True) == {"type": "run", "command": "ls"}
    assert RunAction(command="ls").model_dump(exclude_unset=True) == {"type": "run", "command": "ls"}
    assert InterruptAction().model_dump(exclude_unset=True) == {"type": "interrupt"}
    with pytest.raises(ValidationError, match="command\n  Field required"):
        TerminalAction.model_validate({"type": "run"})
    with pytest.raises(ValidationError, match="Field required"):
        TerminalAction.model_validate({})  # no type: a run, which needs a command
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        TerminalAction.model_validate({"type": "read", "command": "ls"})
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        TerminalAction.model_validate({"type": "paste", "text": "x"})


def test_json_schema_matches_the_parser() -> None:
    """The published schema accepts what the server parses and refuses the rest: only
    ``run`` may leave its tag out."""
    validator = Draft202012Validator(MODELS.action.model_json_schema())
    for good in ({"command": "ls"}, {"type": "read"}, {"type": "write_file", "path": "a", "content": ""}):
        assert not list(validator.iter_errors(good)), good
        TerminalAction.model_validate(good)
    for bad in ({}, {"timeout_s": 1}, {"type": "run"}, {"type": "read", "command": "ls"}):
        assert list(validator.iter_errors(bad)), bad
        with pytest.raises(ValidationError):
            TerminalAction.model_validate(bad)


def test_text_helpers() -> None:
    assert clean(b"\x1b[31mred\x1b[0m\r\nnext\r\n10%\r50%\r100%\n") == "red\nnext\n100%\n"
    assert clip("abcdefghij", 4) == ("ab\n[... 6 characters omitted ...]\nij", 6)
    assert quote("it's\n") == "$'it\\x27s\\x0a'"


@pytest.mark.parametrize(
    "how",
    [
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})",  # a library blocking it
        "signal.signal(signal.SIGINT, signal.SIG_IGN)",  # a background job of a script: `cmd &`
    ],
    ids=["blocked", "ignored"],
)
def test_ctrl_c_reaches_the_command_when_the_host_blocks_or_ignores_sigint(how: str) -> None:
    """A host process that starts with SIGINT blocked (a library, a supervisor) or ignored
    (started as a background job by a script) must not keep Ctrl-C from the command: the
    interrupt test above, run in a pytest started so, failed 4 of 4 before the sandbox
    cleared the mask around its spawns (blocked) and reset ignored signals in the child
    (ignored: every local CI run, started in the background, failed it)."""
    import subprocess
    import sys
    from pathlib import Path

    launcher = (
        f"import os, signal, sys; {how}; "
        "os.execv(sys.executable, [sys.executable, '-m', 'pytest', *sys.argv[1:]])"
    )
    here = Path(__file__)
    args = ["-q", "-p", "no:cacheprovider", str(here), "-k", "timeout_interrupts_the_command and none"]
    done = subprocess.run(
        [sys.executable, "-c", launcher, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=here.parents[3],
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
