"""Processes started off the event loop: the loop never forks.

``asyncio.create_subprocess_exec`` forks on the loop's thread. Under uvloop the loop
forks the whole server (the kernel copies its page tables: 8-11 ms per fork of a loaded
server, 80 ms for a process of 800 MB here) and waits there for the child's exec;
asyncio's own loop runs all of ``Popen`` there. Every session of the server waits meanwhile.

``spawn_off_loop(start)`` runs ``start()`` (a ``subprocess.Popen``) on one of
``THREADS`` spawn threads of the process. The loop then watches the child's exit on a
pidfd and reads and writes its pipes without blocking, through asyncio streams:
``Process``, with what ``asyncio.subprocess.Process`` offers. A caller cancelled while
its child starts gets nothing, and the child is killed and reaped on a spawn thread.

The spawn threads live as long as the process. A parent-death signal (bubblewrap's
``--die-with-parent``) fires when the *thread* that started the child ends, so a thread
that ends after a spawn would kill that sandbox. Python 3.11's ``Popen`` vforks with
the interpreter lock held until the child execs (no page tables are copied): the loop
can wait that long for the lock, never for a fork.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

from . import _procs

#: Threads that start processes for the event loops of the process.
THREADS = 2
#: How long a spawn thread waits for a discarded child to die after its SIGKILL.
REAP_S = 10.0

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def spawn_threads() -> ThreadPoolExecutor:
    """The process's spawn threads (made at the first call)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="openenv-spawn")
        return _pool


def _forked() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()  # a forked child has none of the threads


os.register_at_fork(after_in_child=_forked)


class Process:
    """A child started by ``spawn_off_loop``, as its event loop sees it: ``pid``,
    ``returncode``, ``stdin`` (a ``StreamWriter``), ``stdout`` and ``stderr``
    (``StreamReader``s), ``wait()``, ``send_signal``, ``terminate``, ``kill``, as
    ``asyncio.subprocess.Process``; ``close()`` closes the pipes (each also closes at
    its end of file)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        exited: asyncio.Future[int],
        transports: list[asyncio.BaseTransport],
        streams: tuple[asyncio.StreamWriter | None, asyncio.StreamReader | None, asyncio.StreamReader | None],
    ) -> None:
        self._popen = popen
        self._exited = exited
        self._transports = transports
        self.stdin, self.stdout, self.stderr = streams

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        """Its exit status, once it has exited (negative: the signal that ended it)."""
        return await asyncio.shield(self._exited)

    def send_signal(self, sig: int) -> None:
        if self._popen.returncode is None:  # not reaped yet: the pid is still this child's
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def close(self) -> None:
        for transport in self._transports:
            transport.close()

    def __repr__(self) -> str:
        return f"<Process {self.pid} returncode={self.returncode}>"


async def spawn_off_loop(
    start: Callable[[], subprocess.Popen[bytes]], groups: set[int] | None = None
) -> Process:
    """``start()`` on a spawn thread, the child it returns as a ``Process`` of the
    running loop. ``groups``: the caller's live process groups, from which a discarded
    child's pid is dropped (``start`` adds it)."""
    started = spawn_threads().submit(start)
    try:
        popen = await asyncio.wrap_future(started)
    except asyncio.CancelledError:  # not started (then it never will be), or discarded once it is
        started.add_done_callback(lambda done: _discard_started(done, groups))
        raise
    try:
        return await _attach(popen)
    except BaseException:
        _discard(popen, groups)
        raise


async def _attach(popen: subprocess.Popen[bytes]) -> Process:
    """Streams on the child's pipes and a watch on its exit, in the running loop. On an
    error the transports made are closed, the pipes not handed over too."""
    loop = asyncio.get_running_loop()
    transports: list[asyncio.BaseTransport] = []
    pipes = [popen.stdin, popen.stdout, popen.stderr]
    try:
        stdin = None
        if popen.stdin is not None:
            protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())  # its flow control
            pipes[0] = None  # the transport closes it from now on
            writing, _ = await loop.connect_write_pipe(lambda: protocol, _handover(loop, popen.stdin))
            transports.append(writing)
            stdin = asyncio.StreamWriter(writing, protocol, None, loop)
        readers: list[asyncio.StreamReader | None] = []
        for n, pipe in ((1, popen.stdout), (2, popen.stderr)):
            if pipe is None:
                readers.append(None)
                continue
            reader = asyncio.StreamReader()
            pipes[n] = None
            reading, _ = await loop.connect_read_pipe(
                functools.partial(asyncio.StreamReaderProtocol, reader), _handover(loop, pipe)
            )
            transports.append(reading)
            readers.append(reader)
        exited = _watch_exit(loop, popen)
    except BaseException:
        for transport in transports:
            transport.close()
        for pipe in pipes:
            if pipe is not None:
                pipe.close()
        raise
    return Process(popen, exited, transports, (stdin, readers[0], readers[1]))


class _LibuvFd:
    """A pipe's descriptor handed to uvloop, whose libuv closes it with the transport and
    then calls ``close()`` on what it was given as well: a second close of the number,
    which a spawn thread may have reused meanwhile for a new child's pipe (``Popen`` then
    failed with EBADF). Here that ``close()`` does nothing."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        pass


def _handover(loop: asyncio.AbstractEventLoop, pipe: IO[bytes]) -> Any:
    """What to give ``loop.connect_*_pipe`` for ``pipe``: asyncio's own loops close the
    object they get, once; to any other loop (uvloop) its own copy of the descriptor,
    which that loop alone closes (``_LibuvFd``)."""
    if isinstance(loop, asyncio.BaseEventLoop):
        return pipe
    fd = os.dup(pipe.fileno())
    pipe.close()
    return _LibuvFd(fd)


def _watch_exit(loop: asyncio.AbstractEventLoop, popen: subprocess.Popen[bytes]) -> asyncio.Future[int]:
    """A future of the loop that gets the child's exit status once it has exited: the
    loop polls a pidfd (only this code reaps the child), or without one (Linux before
    5.3) a thread waits."""
    exited: asyncio.Future[int] = loop.create_future()

    def reaped(code: int) -> None:
        if not exited.done():
            exited.set_result(code)

    try:
        pidfd = os.pidfd_open(popen.pid)
    except (AttributeError, OSError):

        def wait() -> None:
            code = popen.wait()
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(reaped, code)

        threading.Thread(target=wait, name=f"openenv-wait-{popen.pid}", daemon=True).start()
        return exited

    def ready() -> None:
        code = popen.poll()
        if code is None:
            return
        loop.remove_reader(pidfd)
        os.close(pidfd)
        reaped(code)

    loop.add_reader(pidfd, ready)
    return exited


def _discard_started(started: Future[subprocess.Popen[bytes]], groups: set[int] | None) -> None:
    if not started.cancelled() and started.exception() is None:
        popen = started.result()
        for pipe in (popen.stdin, popen.stdout, popen.stderr):
            if pipe is not None:
                pipe.close()
        _discard(popen, groups)


def _discard(popen: subprocess.Popen[bytes], groups: set[int] | None) -> None:
    """A child its caller no longer wants: killed with its group, reaped on a spawn
    thread (the caller may be the loop)."""
    if groups is not None:
        groups.discard(popen.pid)
    _procs.kill_group(popen.pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(popen.pid, signal.SIGKILL)
    spawn_threads().submit(_reap, popen)


def _reap(popen: subprocess.Popen[bytes]) -> Any:
    with contextlib.suppress(subprocess.TimeoutExpired):
        popen.wait(timeout=REAP_S)
