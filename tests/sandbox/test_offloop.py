"""``Sandbox.spawn`` / ``arun`` fork and exec off the event loop (``openenv.sandbox._offloop``),
under asyncio's loop and uvloop's (the server's): the child is started by a thread other
than the loop's, and everything ``arun`` promised still holds (bounded output, the wall
clock, input, the group killed), as do a cancelled start (its child killed and reaped), a
signal mask blocked in the thread that made the spawn threads, and an ignored SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest
import uvloop

from openenv.sandbox import Sandbox, SandboxConfig, SandboxLevel, _offloop

LOOPS: dict[str, Callable[[Coroutine[Any, Any, Any]], Any]] = {"asyncio": asyncio.run, "uvloop": uvloop.run}


@pytest.fixture(params=sorted(LOOPS))
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    return LOOPS[request.param]


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    with Sandbox(SandboxConfig(level=SandboxLevel.AUTO)) as sandbox:
        yield sandbox


@contextlib.contextmanager
def children_started(tail: list[str]) -> Iterator[list[tuple[int, int]]]:
    """(thread id, pid) of each child ``subprocess.Popen`` starts meanwhile whose command
    line ends with ``tail`` (not the sandbox's probes, such as ``bwrap --help``)."""
    seen: list[tuple[int, int]] = []
    execute = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def recording(self: subprocess.Popen[Any], args: list[str], *rest: Any, **kwargs: Any) -> None:
        execute(self, args, *rest, **kwargs)
        if list(args[-len(tail) :]) == tail:
            seen.append((threading.get_ident(), self.pid))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subprocess.Popen, "_execute_child", recording)
        yield seen


def test_arun_forks_off_the_loop(box: Sandbox, run: Callable[..., Any]) -> None:
    """Each child of ``arun`` is started by a thread that is not the loop's (before:
    asyncio's loop ran ``Popen`` itself, uvloop forked the server on its loop)."""

    async def main() -> tuple[int, list[Any]]:
        argv = ["sh", "-c", "echo $$"]
        with children_started(argv) as seen:
            done = await asyncio.gather(*(box.arun(argv, timeout_s=30) for _ in range(4)))
        assert all(d.exit_code == 0 for d in done), done
        return threading.get_ident(), sorted(seen, key=lambda s: s[1])

    loop_thread, seen = run(main())
    assert len(seen) == 4, seen
    assert all(thread != loop_thread for thread, _ in seen), seen
    names = {t.ident: t.name for t in threading.enumerate()}
    assert all(names.get(thread, "").startswith("openenv-spawn") for thread, _ in seen), names


def test_arun_keeps_its_contract(box: Sandbox, run: Callable[..., Any]) -> None:
    async def main() -> list[Any]:
        fed = await box.arun(["sh", "-c", "cat; echo err >&2; exit 3"], input=b"in\n", timeout_s=30)
        flood = await box.arun(["sh", "-c", "head -c 300000 /dev/zero"], timeout_s=30, output_limit=1000)
        start = time.monotonic()
        # the group is killed at the wall clock, the grandchild holding the pipe too
        slow = await box.arun(["sh", "-c", "sleep 60 & sleep 60"], timeout_s=0.5)
        return [fed, flood, slow, time.monotonic() - start]

    fed, flood, slow, took = run(main())
    assert (fed.exit_code, fed.stdout, fed.stderr) == (3, b"in\n", b"err\n")
    assert len(flood.stdout) == 1000
    assert flood.stdout_omitted == 300_000 - 1000
    assert slow.timed_out
    assert slow.exit_code is None
    assert took < 20, took  # not the 60 s the sleeps would take
    assert not box._groups  # every group it started is dropped again


def test_a_pipe_is_closed_once(
    box: Sandbox, run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvloop's libuv closes a pipe's descriptor, then calls ``close()`` on the object it
    was given too: a real file object closed the number again, which a spawn thread may
    have reused meanwhile (``Popen`` failed with EBADF in 1 of 100 runs). Here each
    object's ``close()`` first takes that number again if it is free, then checks that
    the close left it alone."""
    closed_twice: list[int] = []
    handover = _offloop._handover

    class Watched:
        def __init__(self, inner: Any) -> None:
            self._inner, self._fd = inner, inner.fileno()

        def fileno(self) -> int:
            return int(self._fd)

        def close(self) -> None:
            taken = []
            for _ in range(256):  # the lowest free numbers, up to ours if it is free
                taken.append(os.open(os.devnull, os.O_RDONLY))
                if taken[-1] >= self._fd:
                    break
            self._inner.close()
            if taken[-1] == self._fd:
                try:
                    os.fstat(self._fd)
                except OSError:
                    closed_twice.append(self._fd)
                    taken.pop()
            for fd in taken:
                os.close(fd)

    monkeypatch.setattr(_offloop, "_handover", lambda loop, pipe: Watched(handover(loop, pipe)))
    done = run(box.arun(["sh", "-c", "cat; echo out; echo err >&2"], input=b"in\n", timeout_s=30))
    assert done.stdout == b"in\nout\n"
    assert closed_twice == []


def test_a_start_finished_after_its_caller_was_cancelled_is_killed_and_reaped(
    box: Sandbox, run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = threading.Event(), threading.Event()
    started: list[subprocess.Popen[bytes]] = []
    popen = Sandbox.popen

    def held(self: Sandbox, argv: Any, **kw: Any) -> subprocess.Popen[bytes]:
        entered.set()
        assert release.wait(30)
        started.append(popen(self, argv, **kw))
        return started[-1]

    monkeypatch.setattr(Sandbox, "popen", held)

    async def main() -> None:
        task = asyncio.ensure_future(box.arun(["sleep", "60"], timeout_s=30))
        assert await asyncio.to_thread(entered.wait, 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()

    run(main())
    end = time.monotonic() + 20
    while (not started or started[0].returncode is None) and time.monotonic() < end:
        time.sleep(0.02)  # reaped by a spawn thread (its own wait sets returncode)
    assert started
    assert started[0].returncode == -signal.SIGKILL
    assert started[0].pid not in box._groups


def test_a_signal_mask_of_the_spawning_thread_is_not_inherited(
    box: Sandbox, run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spawn threads are made by the loop's thread, with its mask: here SIGINT blocked
    (a library may do that), which the child must not keep (Ctrl-C in a shell)."""
    monkeypatch.setattr(_offloop, "_pool", None)  # new threads, made below

    async def main() -> bytes:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            done = await box.arun(["grep", "SigBlk", "/proc/self/status"], timeout_s=30)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return done.stdout

    try:
        assert run(main()).split() == [b"SigBlk:", b"0" * 16]
    finally:
        made = _offloop._pool
        if made is not None:
            made.shutdown(wait=True)


def test_an_ignored_sigint_is_not_inherited(box: Sandbox, run: Callable[..., Any]) -> None:
    """A host started as a background job ignores SIGINT: the child gets it back."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        done = run(box.arun(["grep", "SigIgn", "/proc/self/status"], timeout_s=30))
    finally:
        signal.signal(signal.SIGINT, old)
    ignored = int(done.stdout.split()[1], 16)
    assert not ignored & (1 << (signal.SIGINT - 1)), done.stdout
