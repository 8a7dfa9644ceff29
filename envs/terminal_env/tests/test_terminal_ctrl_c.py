"""A Ctrl-C that misses the command it was meant for (the shell or a child not yet
running the program took it) is sent again to the program that then holds the terminal."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from types import SimpleNamespace
from typing import Any

import pytest
from _terminal_fixtures import LEVELS, terminal
from terminal_env import InterruptAction, ReadAction, RunAction, SendKeysAction, TerminalEnv
from terminal_env._pool import close_shell, new_shell
from terminal_env._shell import PtyShell

from openenv.sandbox import SandboxConfig


def _catch_the_fork(shell: PtyShell, timeout_s: float = 2.0) -> bool:
    """Spin until the shell has forked its command; True if the shell still held the
    terminal then (the child had not taken it yet: a Ctrl-C now is the lost kind)."""
    assert shell.proc is not None
    pid = shell.proc.pid
    children = f"/proc/{pid}/task/{pid}/children"
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        with open(children) as f:
            if f.read().strip():
                return os.tcgetpgrp(shell._fd) == os.getpgid(pid)
    return False


async def test_a_ctrl_c_sent_as_the_shell_starts_the_command_stops_it() -> None:
    """The race of a short step deadline, made likely: the shell and its children share
    one CPU (a child runs only once the shell waits), this loop spins on the other and
    sends Ctrl-C the moment the shell has a child. Before the fix, about 1 in 7 of these
    Ctrl-Cs was lost (``sleep 30`` ran on: the shell was restarted) and 1 in 400 came back
    as a prompt before bash ran the command it had read (the next command waited it out)."""
    mine = os.sched_getaffinity(0)
    shell = await new_shell(SandboxConfig.from_env(level="none"))
    caught = 0
    try:
        assert shell.proc is not None
        theirs = sorted(os.sched_getaffinity(shell.proc.pid))  # a sandbox may pin it
        here = sorted(mine - {theirs[0]})
        if not here:
            pytest.skip("needs two CPUs: the shell on one, the Ctrl-C sent from the other")
        os.sched_setaffinity(shell.proc.pid, {theirs[0]})  # its children inherit it
        os.sched_setaffinity(0, {here[0]})  # this thread: the event loop's
        for _ in range(40):
            await shell.send_command("sleep 30", 5)
            caught += _catch_the_fork(shell)
            chunk = await shell.stop(1.0)
            assert chunk is not None, "Ctrl-C lost: the command ran on"
            assert chunk.status == 130
            shell.take()  # as a step does; then no Ctrl-C may be left to reach the next one
            await shell.send_command("echo next", 5)
            after = await shell.wait_finished(5)
            assert after is not None
            assert (after.output, after.status) == (b"next\r\n", 0)
    finally:
        os.sched_setaffinity(0, mine)
        await close_shell(shell)
    assert caught, "the Ctrl-C never came between the fork and the child taking the terminal"


@pytest.mark.parametrize("level", LEVELS)
async def test_an_interrupt_reaches_the_command_started_after_it(level: str) -> None:
    """Deterministic: the Ctrl-C reaches a command that ignores it (as one lost does),
    and the shell goes on to start the next; that one is stopped too, the shell kept."""
    async with terminal(level) as env:
        await env.step(RunAction(command="V=kept"))
        await _armed(env, "trap '' INT; echo armed; sleep 1; trap - INT; sleep 30")
        stopped = await env.step(InterruptAction())
        assert stopped.exit_code == 130
        after = await env.step(RunAction(command='echo "$V"', timeout_s=5))
        assert after.output == "kept\n"
        assert not after.session_restarted
        assert (await env.state()).restarts == 0


async def _armed(env: TerminalEnv, keys: str) -> None:
    """Type ``keys`` and wait (bounded) until they print ``armed``."""
    output = (await env.step(SendKeysAction(keys=keys, enter=True, timeout_s=0.5))).output
    for _ in range(50):
        if "armed" in output:
            return
        output += (await env.step(ReadAction(timeout_s=0.2))).output
    raise AssertionError(f"never armed: {output!r}")


async def test_the_rest_of_the_line_is_stopped_too() -> None:
    """A command that handles the Ctrl-C and exits lets bash go on with the line, here with
    a builtin that waits: bash holds the terminal with no prompt (as when a Ctrl-C that
    came as the command ended left it reading without one) and gets a Ctrl-C of its own."""
    async with terminal("none") as env:
        await _armed(
            env, "( trap 'kill $!; exit 0' INT; sleep 30 & echo armed; wait ); read -t 30; echo done"
        )
        stopped = await env.step(InterruptAction())
        assert stopped.exit_code == 130
        assert "done" not in stopped.output
        after = await env.step(RunAction(command="echo after", timeout_s=5))
        assert after.output == "after\n"
        assert (await env.state()).restarts == 0


async def test_a_line_read_before_the_ctrl_c_is_stopped_too() -> None:
    """Deterministic: bash has read two lines and runs a builtin of the first when the
    Ctrl-C comes: it prompts, then runs the second all the same (as when the Ctrl-C of a
    short deadline comes as bash has read the command). The stop waits for that one too,
    so the next command runs at once."""
    async with terminal("none") as env:
        await _armed(env, "echo armed; read -t 30 x\nsleep 30")
        stopped = await env.step(InterruptAction())
        assert stopped.exit_code == 130
        after = await env.step(RunAction(command="echo after", timeout_s=5))
        assert after.output == "after\n"
        assert not after.timed_out
        assert (await env.state()).restarts == 0


def test_a_terminal_no_session_controls_is_never_signalled_from_here(tmp_path: Any) -> None:
    """A process started in a session of its own on a terminal it does not open (as
    ``docker exec -t``'s client) leaves the terminal to no session: its process group is
    then 0, and ``killpg(0)`` is this process's own group. No holder is seen there, and
    neither 0 nor this process's group is ever signalled."""
    master, slave = os.openpty()
    proc = subprocess.Popen(["sleep", "30"], stdin=slave, stdout=slave, start_new_session=True)
    got: list[int] = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        shell = PtyShell(SimpleNamespace(inner_workdir=str(tmp_path)))  # type: ignore[arg-type]
        shell._fd = master
        assert shell._foreground() is None
        shell._signal_group(0)
        shell._signal_group(os.getpgrp())
    finally:
        signal.signal(signal.SIGINT, before)
        proc.kill()
        proc.wait()
        os.close(master)
        os.close(slave)
    assert got == []
