"""The event loop never waits on a terminal (``terminal_env._ptyio``): it never watches a
PTY itself (a poll or a read that finds no input waits for the kernel to flush the
terminal's input: 10-38 ms at a time on a loaded host), reads one only when an edge
says input is there, leaves streams and floods to the pump, and never starts a shell (a
fork of the server and a wait for the child's exec); every shell it started is reaped."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import psutil
import pytest
from _terminal_fixtures import LEVELS, sh, terminal
from terminal_env import RestartAction, _ptyio
from terminal_env._ptyio import shared

from openenv.sandbox import Sandbox

LONG = "echo " + "x" * 200_000 + " | wc -c"  # more than a terminal takes at once


async def test_the_loop_never_polls_a_terminal_nor_starts_a_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    polled: list[int] = []
    for name in ("add_reader", "add_writer"):
        real = getattr(loop, name)

        def watch(fd: Any, *args: Any, _real: Any = real) -> Any:
            if isinstance(fd, int) and os.isatty(fd):
                polled.append(fd)
            return _real(fd, *args)

        monkeypatch.setattr(loop, name, watch)
    started: list[tuple[str, int, int]] = []  # (how, thread, pid)
    real_popen, real_spawn = Sandbox.popen, Sandbox.spawn

    def popen(self: Sandbox, argv: Any, **kw: Any) -> Any:
        proc = real_popen(self, argv, **kw)
        started.append(("popen", threading.get_ident(), proc.pid))
        return proc

    async def spawn(self: Sandbox, argv: Any, **kw: Any) -> Any:
        proc = await real_spawn(self, argv, **kw)
        started.append(("spawn", threading.get_ident(), proc.pid))
        return proc

    monkeypatch.setattr(Sandbox, "popen", popen)
    monkeypatch.setattr(Sandbox, "spawn", spawn)

    async with terminal(LEVELS[-1], pool_size=0) as env:
        assert (await sh(env, "seq 200000 | tail -n 1")).output.strip() == "200000"
        assert (await sh(env, LONG)).output.strip() == "200001"  # typed as the terminal took it
        flood = await sh(env, "yes $(seq 100)", timeout_s=1)
        assert flood.timed_out
        assert flood.output
        await env.step(RestartAction())
        assert (await sh(env, "echo hi")).output == "hi\n"
    assert polled == []
    assert [how for how, _, _ in started] == ["popen", "popen"]  # the first shell, the restart's
    assert all(thread != loop_thread for _, thread, _ in started)
    for _, _, pid in started:  # killed with their sandboxes, and reaped
        for _ in range(400):  # bounded: 20 s
            if not psutil.pid_exists(pid):
                break
            await asyncio.sleep(0.05)
        assert not psutil.pid_exists(pid), psutil.Process(pid).status()


async def test_a_terminal_the_pump_cannot_watch_ends_alone(tmp_path: Path) -> None:
    """A failure on one terminal ends that terminal (end of file), never the pump: every
    other terminal of the process still reads."""
    pump, _ = shared()
    fd = os.open(tmp_path / "not-a-terminal", os.O_RDWR | os.O_CREAT)  # epoll refuses a file
    ended = asyncio.Event()
    term = pump.attach(fd, None, lambda data: data or ended.set(), lambda: None)
    term.read(True)
    await asyncio.wait_for(ended.wait(), 10)
    term.close()  # the pump closes the fd
    async with terminal(LEVELS[-1], pool_size=0) as env:
        assert (await sh(env, "echo hi")).output == "hi\n"


class _Reads:
    """``os`` for ``_ptyio``, recording each terminal read: (thread, fd, bytes or None
    for EAGAIN)."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int | None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def read(self, fd: int, n: int) -> bytes:
        try:
            data = os.read(fd, n)
        except BlockingIOError:
            self.rows.append((threading.get_ident(), fd, None))
            raise
        self.rows.append((threading.get_ident(), fd, len(data)))
        return data


async def test_the_loop_reads_only_what_is_there_and_hands_streams_and_floods_to_the_pump(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step's output is read by the loop itself (no thread hop), one read per edge, and
    never a read that finds nothing (that one waits for the tty's flush); a terminal that
    streams or floods is read by the pump, the others' steps go on meanwhile, and it comes
    back to the loop once quiet."""
    reads = _Reads()
    monkeypatch.setattr(_ptyio, "os", reads)
    loop_thread = threading.get_ident()
    async with terminal("none", pool_size=0) as stepper, terminal("none", pool_size=0) as noisy:
        await asyncio.sleep(0.2)  # each is the loop's once its start's output is read
        reads.rows.clear()
        for _ in range(20):
            assert (await sh(stepper, "echo hi")).output == "hi\n"
        mine, theirs = stepper._shell._fd, noisy._shell._fd  # type: ignore[union-attr]
        assert reads.rows
        assert all(t == loop_thread and n for t, fd, n in reads.rows if fd == mine)
        assert sum(fd == mine for _, fd, _ in reads.rows) <= 2 * 20

        reads.rows.clear()
        stream = asyncio.ensure_future(
            sh(noisy, "for i in $(seq 3000); do echo line $i; done; yes", timeout_s=1.5)
        )
        steps = 0
        while not stream.done():
            assert (await sh(stepper, "echo hi")).output == "hi\n"
            steps += 1
        assert (await stream).timed_out
        assert steps >= 3  # not starved (a step takes milliseconds; starved: none or one)
        by_noisy = [(t, n) for t, fd, n in reads.rows if fd == theirs]
        on_loop = [n for t, n in by_noisy if t == loop_thread]
        assert len(by_noisy) > 100
        assert len(on_loop) < len(by_noisy) / 10  # the pump read the stream and the flood
        assert all(n for t, fd, n in reads.rows if t == loop_thread)  # each found input

        io = noisy._shell._io  # type: ignore[union-attr]
        for _ in range(200):  # quiet: back to the loop (bounded: 10 s)
            if not io.pumped:
                break
            await asyncio.sleep(0.05)
        reads.rows.clear()
        assert (await sh(noisy, "echo back")).output == "back\n"
        assert {t for t, fd, _ in reads.rows if fd == io.fd} == {loop_thread}


@pytest.mark.docker
@pytest.mark.timeout(600)
async def test_a_containers_shell_starts_on_a_worker_and_its_exit_ends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A task with an image of its own: its shell (``docker exec``, a local child) is
    started on a worker like a sandbox's, read by the loop, and its exit is seen (the
    client's pidfd): the step says so and the next shell starts, off the loop too; so
    are the commands ``arun`` runs in the container."""
    from _harbor_fixtures import TASKS, docker_base, task_env
    from _harbor_fixtures import sh as run
    from terminal_env._container import ContainerBox

    base = docker_base()
    started: list[tuple[bool, int]] = []  # (a shell, the thread): shells and ``arun``'s
    real = ContainerBox.popen

    def popen(self: ContainerBox, argv: Any, **kw: Any) -> Any:
        started.append((bool(kw.get("ctty")), threading.get_ident()))
        return real(self, argv, **kw)

    monkeypatch.setattr(ContainerBox, "popen", popen)
    reads = _Reads()
    monkeypatch.setattr(_ptyio, "os", reads)
    loop_thread = threading.get_ident()
    async with task_env(TASKS, base) as env:
        await env.reset(options={"task_id": "word-counts"})
        assert (await run(env, "echo hi", 20)).output == "hi\n"
        shells = [shell for shell, _ in started].count(True)
        assert shells >= 1
        exited = await run(env, "exit 3", 20)
        assert exited.session_restarted
        assert not exited.timed_out  # seen by its exit, not by the step's deadline
        assert (await run(env, "echo again", 20)).output == "again\n"
    assert [shell for shell, _ in started].count(True) == shells + 1  # the restart
    assert loop_thread not in {thread for _, thread in started}  # nor ``arun``'s (the verifier's)
    assert any(t == loop_thread for t, _, _ in reads.rows)
