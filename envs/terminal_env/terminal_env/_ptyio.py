"""Terminal I/O and shell starts off the event loop: the loop never waits on a session.

Polling a PTY master for input (``epoll_ctl`` when a reader is added, ``epoll_wait``
on a ready one) makes the kernel flush the terminal's pending input first: the caller
sleeps until a kernel worker has run. On a loaded host that worker waits for a CPU, and
``perf sched`` showed the server's loop asleep there for 10-38 ms at a time during the
terminal chaos test. Starting a shell on the loop (uvloop forks the server, copies its
page tables and waits for the child's exec) cost it 8-11 ms more each time.

So one thread of its own (``Pump``) polls and reads every terminal of the process and
watches their shells' exit (a pidfd each); the loop gets what was read as chunks of at
most ``PENDING`` bytes per terminal, one hand-over per loop turn at most (so a
flood costs the loop bounded work per turn and the pump stops reading a terminal the
loop is behind on). Writes stay on the loop (a non-blocking ``write`` of what the
terminal takes now); the pump tells it when there is room again. Shells are started on
``WORKERS`` threads of their own (``Workers``), made before serving: the loop starts
no thread and forks nothing.

These threads run at the loop thread's priority (``favour_loop_thread``): one of them
preempted while it holds the interpreter lock holds the loop up as long (at nice 0
behind CPU hogs, the loop's waits for that lock grew to 1.4 s in 20 s of chaos).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import select
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from openenv.server._priority import favour_loop_thread

log = logging.getLogger("terminal_env")

#: Read from one terminal per turn of the pump, at most (a PTY read gives 4 KiB or less).
CHUNK = 65536
#: Read and not yet taken by the loop, per terminal, at most (then reading waits).
PENDING = 2 * CHUNK
#: Threads that start shells and make, kill and remove sandboxes (as many as the
#: default executor they replace had at most on 2 cores).
WORKERS = 6

#: A read shorter than this drained the terminal (a full one gives about 4 KiB): a step's
#: few bytes go to the loop at once, without a read that finds nothing.
_SHORT = 1024
_READ = select.EPOLLIN
_WRITE = select.EPOLLOUT


class Terminal:
    """A PTY master (and its shell's exit) watched by the pump for one loop.

    ``on_data(bytes)`` gets each chunk read (``b""`` once at end of file), ``on_exit()``
    once when the shell has exited (and has been reaped); both run on ``loop``.
    """

    def __init__(
        self,
        pump: Pump,
        fd: int,
        proc: subprocess.Popen[bytes] | None,
        loop: asyncio.AbstractEventLoop,
        on_data: Callable[[bytes], None],
        on_exit: Callable[[], None],
    ) -> None:
        self._pump = pump
        self.fd = fd
        self.proc = proc
        self.loop = loop
        self.on_data = on_data
        self.on_exit = on_exit
        # Under the pump's lock:
        self.reading = False
        self.pending = bytearray()  # read, not yet handed to the loop
        self.posted = False  # a hand-over is queued on the loop
        self.eof = False  # read to its end (the loop is told after what is pending)
        self.failed = False  # the pump could not handle it: ended
        self.closing = False
        self.on_room: Callable[[], None] | None = None
        self.mask = 0  # what the pump's epoll has for ``fd`` now
        self.pidfd = -1

    def read(self, on: bool) -> None:
        """Read the terminal (on) or leave what it has unread (off: back-pressure)."""
        self._pump.change(self, reading=on)

    def when_writable(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` on the loop once the terminal has room for input (None: stop)."""
        self._pump.change(self, on_room=callback)

    def close(self) -> None:
        """Stop watching the terminal and close its fd (on the pump's thread: never
        while the pump may still read it). The shell's exit is still watched."""
        self._pump.change(self, closing=True)

    def _hand_over(self) -> None:
        """On the loop: what was read so far, in one call (one per loop turn at most)."""
        with self._pump._lock:
            data, self.pending = bytes(self.pending), bytearray()
            self.posted = False
            eof = self.eof and not self.closing
            was_full = len(data) >= PENDING
        if data:
            self.on_data(data)
        if eof:
            self.on_data(b"")
        elif was_full:
            self._pump.change(self)  # it may read again


class Pump:
    """One thread polling and reading every terminal of the process (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoll = select.epoll()
        self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll.register(self._wake, _READ)
        self._dirty: collections.deque[Terminal] = collections.deque()
        self._fds: dict[int, Terminal] = {}
        self._pidfds: dict[int, Terminal] = {}
        self._thread = threading.Thread(target=self._run, name="openenv-pty", daemon=True)
        self._thread.start()

    def attach(
        self,
        fd: int,
        proc: subprocess.Popen[bytes] | None,
        on_data: Callable[[bytes], None],
        on_exit: Callable[[], None],
    ) -> Terminal:
        """Watch ``fd`` (a non-blocking PTY master, the pump's to close from now on) and,
        with ``proc``, its exit. Call on the loop that is to get the callbacks."""
        term = Terminal(self, fd, proc, asyncio.get_running_loop(), on_data, on_exit)
        if proc is not None:  # ours, not yet reaped: the pid is still this process
            term.pidfd = os.pidfd_open(proc.pid)
        self.change(term)
        return term

    def change(
        self,
        term: Terminal,
        *,
        reading: bool | None = None,
        on_room: Any = False,
        closing: bool = False,
    ) -> None:
        with self._lock:
            if reading is not None:
                term.reading = reading
            if on_room is not False:
                term.on_room = on_room
            if closing:
                term.closing = True
            self._dirty.append(term)
        os.eventfd_write(self._wake, 1)

    # ---- the pump's thread -------------------------------------------------------------
    def _run(self) -> None:
        favour_loop_thread()  # the loop waits for the interpreter lock when this holds it
        while True:
            try:
                events = self._epoll.poll()
            except InterruptedError:
                continue
            for fd, mask in events:
                if fd == self._wake:
                    with contextlib.suppress(BlockingIOError):
                        os.eventfd_read(self._wake)
                elif (term := self._pidfds.get(fd)) is not None:
                    self._guarded(self._exited, term)
                elif (term := self._fds.get(fd)) is not None:
                    self._guarded(self._ready, term, mask)
            self._apply()

    def _guarded(self, step: Callable[..., None], term: Terminal, *args: Any) -> None:
        """One terminal's step; a failure ends that terminal (its shell sees end of file),
        never the pump, which every other terminal of the process needs."""
        try:
            step(term, *args)
        except Exception:
            log.exception("terminal pump: fd %d failed; its terminal is ended", term.fd)
            with contextlib.suppress(OSError):
                self._epoll.unregister(term.fd)
            with self._lock:
                term.mask, term.eof, term.failed = 0, True, True
                room, term.on_room = term.on_room, None
                post, term.posted = not term.posted, True
            if room is not None:
                self._post(term, room)
            if post:
                self._post(term, term._hand_over)

    def _ready(self, term: Terminal, mask: int) -> None:
        with self._lock:
            room = term.on_room if mask & (_WRITE | select.EPOLLHUP | select.EPOLLERR) else None
            if room is not None:
                term.on_room = None
                self._dirty.append(term)
            read = term.reading and not term.eof and len(term.pending) < PENDING and not term.closing
        if room is not None:
            self._post(term, room)
        if not (read and mask & (_READ | select.EPOLLHUP | select.EPOLLERR)):
            return
        got, eof = bytearray(), False
        while len(got) < CHUNK:  # what the terminal has now, up to CHUNK
            try:
                data = os.read(term.fd, CHUNK - len(got))
            except BlockingIOError:
                break
            except OSError:  # EIO: every process holding the terminal is gone
                data = b""
            if not data:
                eof = True
                break
            got += data
            if len(data) < _SHORT:  # the terminal had no more: no read to find it empty
                break
        with self._lock:
            term.pending += got
            term.eof = eof
            post = not term.posted and (term.pending or eof)
            term.posted = term.posted or bool(post)
            if len(term.pending) >= PENDING or eof:
                self._dirty.append(term)
        if post:
            self._post(term, term._hand_over)

    def _exited(self, term: Terminal) -> None:
        self._epoll.unregister(term.pidfd)
        del self._pidfds[term.pidfd]
        os.close(term.pidfd)
        term.pidfd = -1
        if term.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired, ChildProcessError):
                term.proc.wait(1)  # reap it (it has exited: no wait)
        self._post(term, term.on_exit)

    def _apply(self) -> None:
        """Bring the epoll set in line with what the changed terminals want."""
        while True:
            with self._lock:
                if not self._dirty:
                    return
                term = self._dirty.popleft()
                if term.fd < 0:
                    continue
            self._guarded(self._update, term)

    def _update(self, term: Terminal) -> None:
        with self._lock:
            want = 0
            if not term.closing and not term.failed:
                if term.reading and not term.eof and len(term.pending) < PENDING:
                    want |= _READ
                if term.on_room is not None:
                    want |= _WRITE
        if term.pidfd >= 0 and term.pidfd not in self._pidfds:
            self._pidfds[term.pidfd] = term
            self._epoll.register(term.pidfd, _READ)
        # Nothing wanted: out of the set (a hung-up terminal would report itself forever).
        if want != term.mask:
            if term.mask and want:
                self._epoll.modify(term.fd, want)
            elif want:
                self._epoll.register(term.fd, want)
            else:
                self._epoll.unregister(term.fd)
            self._fds[term.fd] = term
            term.mask = want
        if term.closing:
            self._fds.pop(term.fd, None)
            os.close(term.fd)
            term.fd = -1

    def _post(self, term: Terminal, fn: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to tell
            term.loop.call_soon_threadsafe(fn)


class Workers:
    """``count`` threads, started at once, that run blocking calls (starting a shell,
    killing a sandbox) for the loop, in order of submission."""

    def __init__(self, count: int) -> None:
        self._calls: collections.deque[tuple[Future[Any], Callable[[], Any]]] = collections.deque()
        self._ready = threading.Semaphore(0)
        for n in range(count):
            threading.Thread(target=self._run, name=f"openenv-pty-start-{n}", daemon=True).start()

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        fut: Future[Any] = Future()
        self._calls.append((fut, fn))
        self._ready.release()
        return fut

    async def call(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.wrap_future(self.submit(fn))

    def _run(self) -> None:
        favour_loop_thread()  # as the pump's (``Pump._run``)
        while True:
            self._ready.acquire()
            fut, fn = self._calls.popleft()
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                result = fn()
            except BaseException as exc:
                fut.set_exception(exc)
                del exc
            else:
                fut.set_result(result)
            del fut, fn


_shared: tuple[Pump, Workers] | None = None
_shared_lock = threading.Lock()


def shared() -> tuple[Pump, Workers]:
    """The process's pump and workers (started at the first call: call it before
    serving, off the loop, so that the loop starts no thread)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = (Pump(), Workers(WORKERS))
        return _shared


async def off_loop(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on one of the process's workers (``asyncio.to_thread`` without its
    executor, which starts its threads on the loop as calls come)."""
    return await shared()[1].call(lambda: fn(*args))


def _forked() -> None:
    global _shared, _shared_lock
    _shared, _shared_lock = None, threading.Lock()  # a forked child has none of the threads


os.register_at_fork(after_in_child=_forked)
