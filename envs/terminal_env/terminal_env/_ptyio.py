"""Terminal I/O and shell starts that never make the event loop wait on a session.

A PTY master's poll, and a read that finds no input, first flush the terminal's pending
input (Linux ``n_tty_poll``/``n_tty_read`` call ``tty_buffer_flush_work``): the caller
sleeps until the kernel worker pushing what the shell wrote has run. On a loaded host
that worker waits for a CPU: ``perf sched`` showed the loop asleep there 10-38 ms at a
time (a level-triggered ``add_reader``: each ``epoll_ctl`` and the poll after each
read). A read made when input *is* there copies it and returns without that wait.

So the loop reads a terminal only on an edge: each terminal has an epoll of its own
(``edges``: the PTY, ``EPOLLIN | EPOLLET``) that the loop watches. An edge comes when
the kernel worker has moved new output into the terminal's buffer, and the loop makes
one read per edge, which finds it there. One case is left: a read that raced the next
edge (took that input too) leaves the edge stale, and the loop's next poll of a stale
edge waits for the flush if the shell has written again meanwhile. A shell that has
finished a command has not (``Terminal.settled``); so after input is typed or a command
ends the loop reads at most ``EDGES`` times, and a terminal that needs more (a stream)
or fills the line discipline's buffer (``FULL``: a flood) goes to the pump, leaving
``edges`` at once (no poll: nothing stale is left for the loop). A typed Ctrl-C leaves
none either: it discards only output the kernel worker has not moved yet, which no edge
announced (seen here: what was in the buffer is read after it).

The pump (``Pump``, one thread of its own) reads those terminals (one bounded hand-over
per terminal per loop turn, at most ``PENDING`` bytes ahead of the loop), and each new
one until it is drained; it hands a terminal back to the loop once it has had no input
for a while (``QUIET_S``, doubled each time it streams again), with no input unread: it
reads until ``EAGAIN`` and then puts the PTY in ``edges`` (registering polls: the pump
thread may wait there, the loop never). It also watches each shell's exit (a pidfd) and
a terminal's room for a writer it had none for. Writes stay on the loop (a non-blocking
``write`` of what the terminal takes now).

The server holds each terminal's other end too, so it never hangs up (a hang-up wakes
the reader with nothing to read); a shell's exit is its pidfd's.

Shells are started on ``WORKERS`` threads of their own (``Workers``), made before
serving: the loop starts no thread and forks nothing. These threads and the pump run
at the loop thread's priority (``favour_loop_thread``): one of them preempted while it
holds the interpreter lock holds the loop up as long.
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
import time
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
#: A loop read this long found the line discipline's 4 KiB buffer about full: the shell
#: writes faster than the loop reads, and the terminal goes to the pump.
FULL = 4000
#: Reads the loop makes after input is typed or a command ends (``settled``), at most:
#: a step's output and its prompt take one or two; a terminal that needs more streams,
#: and goes to the pump.
EDGES = 2
#: A terminal handed to the pump goes back to the loop once it has had no input this
#: long; each time it streams again, twice as long (up to ``MAX_QUIET_S``).
QUIET_S = 0.1
MAX_QUIET_S = 4.0
#: A hand-back that found new input is tried again this much later.
_RETRY_S = 0.005

#: A pump read shorter than this drained the terminal (a full one gives about 4 KiB).
_SHORT = 1024
_READ = select.EPOLLIN
_WRITE = select.EPOLLOUT
_EDGE = select.EPOLLIN | select.EPOLLET


class Terminal:
    """A PTY master (and its shell's exit) read for one loop, by the loop or the pump.

    ``on_data(bytes)`` gets each chunk read (``b""`` once at end of file), ``on_exit()``
    once when the shell has exited (and has been reaped); both run on ``loop``.
    """

    def __init__(
        self,
        pump: Pump,
        fd: int,
        slave: int,
        proc: subprocess.Popen[bytes] | None,
        loop: asyncio.AbstractEventLoop,
        on_data: Callable[[bytes], None],
        on_exit: Callable[[], None],
    ) -> None:
        self._pump = pump
        self.fd = fd
        self.slave = slave  # held while the terminal is (-1: none)
        self.proc = proc
        self.loop = loop
        self.on_data = on_data
        self.on_exit = on_exit
        self.edges = select.epoll()  # ``fd`` edge-triggered: the loop's wake-up
        self.edges_fd = self.edges.fileno()
        # The loop's (its thread only):
        self.watched = False  # the loop watches ``edges``
        self.unread = False  # an edge came while not reading
        self.reads_left = EDGES  # before it counts as a stream (the pump resets it)
        # Under the pump's lock:
        self.reading = False
        self.pumped = True  # the pump reads (from the start until quiet), else the loop
        self.quiet_at = 0.0  # the pump hands it back from then on (monotonic)
        self.streamed = False  # handed over by the loop (not just started): back once quiet
        self.quiet_s = QUIET_S / 2  # how long quiet, doubled at each hand-over
        self.pending = bytearray()  # read by the pump, not yet handed to the loop
        self.posted = False  # a hand-over is queued on the loop
        self.eof = False  # read to its end (the loop is told after what is pending)
        self.failed = False  # the pump could not handle it: ended
        self.closing = False
        self.on_room: Callable[[], None] | None = None
        self.mask = 0  # what the pump's epoll has for ``fd`` now
        self.pidfd = -1

    def read(self, on: bool) -> None:
        """Read the terminal (on) or leave what it has unread (off: back-pressure)."""
        with self._pump._lock:
            self.reading = on
            pumped = self.pumped
        if pumped:
            self._pump.change(self)
        elif on and self.unread:
            self.loop.call_soon(self._read_unread)

    def typed(self) -> None:
        """On the loop: input was typed (the output it brings is not a stream)."""
        self.reads_left = EDGES

    def settled(self) -> None:
        """On the loop: the shell has finished a command (it waits for input now)."""
        self.reads_left = EDGES

    def when_writable(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` on the loop once the terminal has room for input (None: stop)."""
        self._pump.change(self, on_room=callback)

    def close(self) -> None:
        """Stop reading the terminal and close it (the pump closes the fds: never while
        it may still read them). The shell's exit is still watched."""
        self._unwatch()
        self._pump.change(self, closing=True)

    # ---- the loop's reads ---------------------------------------------------------------
    def _watch(self) -> None:
        """On the loop, at the start: read on ``fd``'s edges (none while the pump reads:
        ``fd`` is in ``edges`` only while the loop reads it)."""
        self.loop.add_reader(self.edges_fd, self._edge)
        self.watched = True

    def _unwatch(self) -> None:
        if self.watched:
            self.loop.remove_reader(self.edges_fd)
            self.watched = False

    def _edge(self) -> None:
        """On the loop: new input arrived (one event per arrival)."""
        self.edges.poll(0, 1)  # take the edge: the loop's epoll would report it again
        if self.pumped:
            return
        if self.reading:
            self._read_once()
        else:
            self.unread = True  # read when reading resumes: it is there

    def _read_unread(self) -> None:
        if self.unread:  # (not read since, by an edge)
            self._read_once()

    def _read_once(self) -> None:
        """On the loop: one read, made when an edge said input is there."""
        if self.pumped or not self.watched or not self.reading:
            return
        self.unread = False
        try:
            data: bytes | None = os.read(self.fd, CHUNK)
        except BlockingIOError:  # the edge was raced: let the pump read from now on
            data = None
        except OSError:  # EIO: every process holding the terminal is gone
            data = b""
        if self.pending:
            self._hand_over()  # what the pump read before it handed the terminal back
        self.reads_left -= 1
        if data == b"":
            with self._pump._lock:
                self.eof = True
            self._unwatch()
            self.on_data(b"")
            return
        if data:
            self.on_data(data)  # may settle it
        # Before the loop polls again: a read that raced an edge left it stale, and the
        # loop's poll of a stale edge waits for the flush if the shell writes on.
        stream = data is None or len(data) >= FULL or self.reads_left <= 0
        if stream and self.watched and not self.pumped:
            self._to_pump()

    def _to_pump(self) -> None:
        """On the loop: the pump reads from now on (a stream, a flood)."""
        self.edges.unregister(self.fd)  # no poll (the loop's epoll polls what ``edges`` has)
        self.unread = False
        with self._pump._lock:
            self.pumped = self.streamed = True
            self.quiet_s = min(MAX_QUIET_S, self.quiet_s * 2)
            self.quiet_at = time.monotonic() + self.quiet_s
        self._pump.change(self)

    def _hand_over(self) -> None:
        """On the loop: what the pump read so far, in one call (one per loop turn at most)."""
        with self._pump._lock:
            data, self.pending = bytes(self.pending), bytearray()
            self.posted = False
            eof = self.eof and self.pumped and not self.closing
            was_full = len(data) >= PENDING
        if data:
            self.on_data(data)
        if eof:
            self.on_data(b"")
        elif was_full:
            self._pump.change(self)  # it may read again


class Pump:
    """One thread reading the terminals the loop does not, and watching exits (see the
    module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoll = select.epoll()
        self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll.register(self._wake, _READ)
        self._dirty: collections.deque[Terminal] = collections.deque()
        self._fds: dict[int, Terminal] = {}
        self._pidfds: dict[int, Terminal] = {}
        self._pumped: set[Terminal] = set()  # read here: handed back once quiet
        self._thread = threading.Thread(target=self._run, name="openenv-pty", daemon=True)
        self._thread.start()

    def attach(
        self,
        fd: int,
        proc: subprocess.Popen[bytes] | None,
        on_data: Callable[[bytes], None],
        on_exit: Callable[[], None],
        *,
        slave: int = -1,
    ) -> Terminal:
        """Watch ``fd`` (a non-blocking PTY master; it and ``slave`` are the pump's to
        close from now on) and, with ``proc``, its exit. Call on the loop that is to get
        the callbacks."""
        term = Terminal(self, fd, slave, proc, asyncio.get_running_loop(), on_data, on_exit)
        if proc is not None:  # ours, not yet reaped: the pid is still this process
            term.pidfd = os.pidfd_open(proc.pid)
        term._watch()  # ``edges`` is empty: nothing to poll yet
        self.change(term)  # the pump reads it first, and hands it to the loop once drained
        return term

    def change(self, term: Terminal, *, on_room: Any = False, closing: bool = False) -> None:
        with self._lock:
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
                events = self._epoll.poll(self._timeout())
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
            self._hand_back_quiet()

    def _timeout(self) -> float:
        """Seconds until the next pumped terminal may go back to the loop (-1: none)."""
        with self._lock:
            due = [t.quiet_at for t in self._pumped if t.reading and not (t.closing or t.eof or t.failed)]
        return max(0.0, min(due) - time.monotonic()) if due else -1

    def _guarded(self, step: Callable[..., None], term: Terminal, *args: Any) -> None:
        """One terminal's step; a failure ends that terminal (its shell sees end of file),
        never the pump, which every other terminal of the process needs."""
        try:
            step(term, *args)
        except Exception:
            log.exception("terminal pump: fd %d failed; its terminal is ended", term.fd)
            with contextlib.suppress(OSError, ValueError):
                self._epoll.unregister(term.fd)
            self._pumped.discard(term)
            with self._lock:
                term.mask, term.eof, term.failed, term.pumped = 0, True, True, True
                room, term.on_room = term.on_room, None
                post, term.posted = not term.posted, True
            if room is not None:
                self._post(term, room)
            if post:
                self._post(term, term._unwatch)
                self._post(term, term._hand_over)

    def _ready(self, term: Terminal, mask: int) -> None:
        with self._lock:
            room = term.on_room if mask & (_WRITE | select.EPOLLHUP | select.EPOLLERR) else None
            if room is not None:
                term.on_room = None
                self._dirty.append(term)
            read = term.pumped and term.reading and not term.eof and len(term.pending) < PENDING
            read = read and not term.closing
        if room is not None:
            self._post(term, room)
        if not (read and mask & (_READ | select.EPOLLHUP | select.EPOLLERR)):
            return
        got, eof = self._read(term.fd, stop_short=True)
        self._got(term, got, eof)

    @staticmethod
    def _read(fd: int, *, stop_short: bool) -> tuple[bytearray, bool]:
        """What the terminal has now, up to ``CHUNK`` (this thread may wait for its flush)."""
        got, eof = bytearray(), False
        while len(got) < CHUNK:
            try:
                data = os.read(fd, CHUNK - len(got))
            except BlockingIOError:
                break
            except OSError:  # EIO: every process holding the terminal is gone
                data = b""
            if not data:
                eof = True
                break
            got += data
            if stop_short and len(data) < _SHORT:  # no more now: no read that finds nothing
                break
        return got, eof

    def _got(self, term: Terminal, got: bytearray, eof: bool) -> None:
        with self._lock:
            term.pending += got
            term.eof = term.eof or eof
            if got and term.streamed:  # still streams: stays here a while
                term.quiet_at = time.monotonic() + term.quiet_s
            post = not term.posted and bool(term.pending or eof)
            term.posted = term.posted or post
            if len(term.pending) >= PENDING or eof:
                self._dirty.append(term)
        if post:
            self._post(term, term._hand_over)

    def _hand_back_quiet(self) -> None:
        now = time.monotonic()
        for term in list(self._pumped):
            with self._lock:
                due = term.reading and term.quiet_at <= now and len(term.pending) < PENDING
                due = due and not (term.closing or term.eof or term.failed)
            if due:
                self._guarded(self._hand_back, term)

    def _hand_back(self, term: Terminal) -> None:
        """Give a quiet terminal to the loop with no input unread: from then on each edge
        is new input, which the loop's one read finds there."""
        got, eof = self._read(term.fd, stop_short=False)  # until EAGAIN (here it may wait)
        if got or eof:  # input came: read here, try again later
            self._got(term, got, eof)
            with self._lock:
                later = time.monotonic() + (term.quiet_s if term.streamed else _RETRY_S)
                term.quiet_at = max(term.quiet_at, later)
            return
        with self._lock:
            if term.closing or term.eof or term.failed:
                return
            term.reads_left = EDGES
            term.pumped = term.streamed = False
        self._pumped.discard(term)
        self._update(term)  # out of this epoll's reading
        # Registering polls ``fd`` (here, not on the loop): input that came since the
        # last read is an edge at once.
        term.edges.register(term.fd, _EDGE)

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
                if term.pumped and term.reading and not term.eof and len(term.pending) < PENDING:
                    want |= _READ
                if term.on_room is not None:
                    want |= _WRITE
            pumped = term.pumped and not term.closing and not term.failed
        if term.pidfd >= 0 and term.pidfd not in self._pidfds:
            self._pidfds[term.pidfd] = term
            self._epoll.register(term.pidfd, _READ)
        if pumped:
            self._pumped.add(term)
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
            self._pumped.discard(term)
            self._fds.pop(term.fd, None)
            term.edges.close()
            os.close(term.fd)
            if term.slave >= 0:
                os.close(term.slave)
            term.fd = term.slave = -1

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
