"""One persistent ``bash`` on a PTY inside a sandbox, driven from the event loop.

The shell runs with job control on its own terminal (so Ctrl-C reaches the foreground
command), no echo, no line editing, and a ``PROMPT_COMMAND`` that prints a marker
with the exit status and working directory after every command::

    \\x1e<nonce>:<status>:<cwd>\\x1e

Output is collected between markers into a bounded buffer (head and tail kept). When
nobody waits and the buffer is full, the PTY is no longer read, so a ``yes`` left
running blocks on its own terminal instead of costing server memory and CPU.

The loop reads the terminal only when an edge says output is there, and never starts
the shell itself (``_ptyio``): a shell, a sandbox's or a container's (``docker exec``),
is started on a worker thread, and a thread of its own reads a terminal that floods.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import signal
import subprocess
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openenv.sandbox import HeadTail, Sandbox

from . import _ptyio

if TYPE_CHECKING:
    from ._container import ContainerBox

_WINDOW = 4600  # longest marker: nonce, status, a PATH_MAX cwd
#: After a Ctrl-C, the pauses between looks at who holds the terminal, then one every
#: ``_RECHECK_EVERY_S``: a new foreground program gets a SIGINT of its own (``stop``), at
#: most ``_MORE_CTRL_C``; the shell, holding it with no prompt from ``_SHELL_HELD_S`` on.
_RECHECK_S = (0.02, 0.03, 0.05)
_RECHECK_EVERY_S = 0.2
_MORE_CTRL_C = 3
_SHELL_HELD_S = 0.05
_ENV = {
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "PYTHONUNBUFFERED": "1",
    "DEBIAN_FRONTEND": "noninteractive",
    "HISTFILE": "/dev/null",
    "PS1": "",
    "PS2": "",
    "PS0": "",
}


@dataclass(slots=True)
class Chunk:
    """Output read from the shell; ``status``/``cwd`` are set when a command ended."""

    output: bytes
    omitted: int = 0
    status: int | None = None
    cwd: str | None = None

    @property
    def finished(self) -> bool:
        return self.status is not None


class ShellDied(Exception):
    """The shell exited (``exit``, killed); it must be restarted."""


class TerminalStalled(ShellDied):
    """The terminal took no input until the deadline (a stopped shell, a program that
    never reads): what was typed is cut short, so the shell must be restarted."""


def quote(command: str) -> str:
    """``command`` as one bash ``$'...'`` word: safe to ``eval`` from a single line."""
    out = []
    for byte in command.encode("utf-8", errors="surrogateescape"):
        if 0x20 <= byte < 0x7F and byte not in (0x27, 0x5C):
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"


class PtyShell:
    """A ``bash`` on a PTY in ``sandbox``. Start it with ``await start()``."""

    def __init__(self, sandbox: Sandbox | ContainerBox, *, read_limit: int = 1 << 20) -> None:
        self.sandbox = sandbox
        self.read_limit = read_limit
        self.proc: subprocess.Popen[bytes] | None = None
        self._fd = -1
        self._io: _ptyio.Terminal | None = None
        self._gone = asyncio.Event()  # the shell has exited
        self._nonce = secrets.token_hex(6)
        self._mark = re.compile(rb"\x1e" + self._nonce.encode() + rb":(\d+):([^\x1e]*)\x1e")
        self._window = bytearray()
        self._out = HeadTail(read_limit)
        self._done: deque[Chunk] = deque()
        self._event = asyncio.Event()
        self._reading = False
        self._waiting = 0
        self._eof = False
        self._exited = False
        self._room: asyncio.Future[None] | None = None  # a writer waiting for room
        self._own_group = -1  # the shell's process group (-1: none known)
        self._probe: bytes | None = None  # what a probe typed by ``stop`` prints, till it prompts
        self.cwd = sandbox.inner_workdir

    # ---- lifecycle -----------------------------------------------------------------
    async def start(self, timeout_s: float = 10.0) -> None:
        env = {**_ENV, "PROMPT_COMMAND": f'printf "\\036{self._nonce}:%s:%s\\036" "$?" "$PWD"'}
        argv = ["bash", "--noprofile", "--norc", "--noediting", "-i"]
        pump, workers = _ptyio.shared()
        box = self.sandbox  # a sandbox's shell, or a container's ``docker exec`` client
        started = workers.submit(lambda: _open(box, argv, env))  # forked on a worker
        try:
            master, slave, proc = await asyncio.shield(asyncio.wrap_future(started))
        except asyncio.CancelledError:
            started.add_done_callback(_discard)
            raise
        self.proc = proc
        self._io = pump.attach(master, proc, self._on_data, self._on_exit, slave=slave)
        self._fd = master
        self._resume()
        # Bash prompts (a marker) before it reads the setup line, then once after it.
        deadline = time.monotonic() + timeout_s
        await self.write(b"stty -echo -icanon; set +o history\n", timeout_s)
        for _ in range(2):
            if await self.wait_finished(max(0.0, deadline - time.monotonic())) is None:
                raise ShellDied("the shell did not start")
        self.take()
        # At its prompt, the shell holds its terminal. A container's shell is on the
        # engine's terminal: this one is its client's (a process group 0, or the client's,
        # which a SIGINT would end), and ``stop`` just types Ctrl-C and waits.
        if isinstance(box, Sandbox):
            self._own_group = (self._foreground() or (-1, b""))[0]

    def _on_exit(self) -> None:
        # The exit, not an end of file, ends the shell: the server holds the terminal's
        # other end (as may a background job), so reading it never ends.
        self._exited = True
        self._gone.set()
        self._event.set()

    async def close(self) -> None:
        """Stop reading and close the terminal (the sandbox kills the processes)."""
        self._pause()
        self._stop_writer()  # before the fd closes; the writer then finds the shell gone
        if self._io is not None:
            self._fd = -1
            self._io.close()  # the pump closes the fd once it no longer watches it
            self._io = None
        if self.proc is not None and not self._exited:
            # os.kill, not proc.kill(): Popen.send_signal polls first and may reap the
            # process under the nose of its watcher (the pump's pidfd).
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._gone.wait(), 5)

    @property
    def alive(self) -> bool:
        return not self._eof and not self._exited

    # ---- input -----------------------------------------------------------------------
    async def write(self, data: bytes, timeout_s: float) -> None:
        """Type ``data`` into the terminal, never blocking the event loop.

        What the terminal takes now is written at once; the rest when it has room
        again. ``TerminalStalled`` when some is still left at ``timeout_s`` (a stopped
        shell, a program that never reads): the part written stays typed.
        """
        view = memoryview(data)
        deadline = time.monotonic() + timeout_s
        self._waiting += 1  # keep reading meanwhile: output must not wait on input
        self._resume()
        try:
            while view := view[self._write_some(view) :]:
                left = deadline - time.monotonic()
                if left <= 0 or not await self._writable(left):
                    raise TerminalStalled(
                        f"the terminal took no input for {timeout_s:g}s "
                        f"({len(data) - len(view)} of {len(data)} bytes typed)"
                    )
        finally:
            self._waiting -= 1

    def _write_some(self, view: memoryview) -> int:
        """Bytes of ``view`` the terminal took now (0 when it has no room)."""
        if self._fd < 0 or self._eof:
            raise ShellDied("the shell is not running")
        if self._io is not None:
            self._io.typed()
        try:
            return os.write(self._fd, view)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise ShellDied(f"the terminal is gone: {exc}") from exc

    async def _writable(self, timeout_s: float) -> bool:
        """Wait until the terminal has room for input (True) or ``timeout_s`` (False)."""
        if self._io is None:
            return False
        room: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._room = room
        self._io.when_writable(self._stop_writer)
        try:
            await asyncio.wait_for(room, timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            self._stop_writer()

    def _stop_writer(self) -> None:
        """Stop watching for room and wake the writer (room, a deadline, or close())."""
        if self._room is not None:
            room, self._room = self._room, None
            if self._io is not None:
                self._io.when_writable(None)
            if not room.done():
                room.set_result(None)

    async def send_command(self, command: str, timeout_s: float) -> None:
        await self.write(f"eval {quote(command)}\n".encode(), timeout_s)

    def interrupt(self) -> None:
        """Ctrl-C: SIGINT to the foreground process group of the terminal (if the
        terminal has room for it now: this never waits)."""
        with contextlib.suppress(ShellDied):
            self._write_some(memoryview(b"\x03"))

    async def stop(self, grace_s: float) -> Chunk | None:
        """Ctrl-C, and the output of the command it stopped once the shell prompts again
        (None if it has not by ``grace_s``).

        The terminal turns the byte into a SIGINT for whatever holds its foreground when
        it handles it, and one that comes as bash reads or starts the command can miss
        it (with the shell and this loop on CPUs of their own, 1 in 7 did): bash prompts
        and then runs the line it had read all the same; bash takes it after the fork and
        waits for the command; the child takes it before it runs the program (with bash's
        handler); or bash, interrupted as the command ended, reads on without prompting.
        So until the prompt comes, each program that takes the foreground after the
        Ctrl-C (a new process group, or a new program in it) gets a SIGINT of its own (a
        program that handles Ctrl-C is not sent a second one), and the shell one if it
        holds the terminal unprompted for ``_SHELL_HELD_S`` (a prompt on its way takes
        far less). A prompt after a Ctrl-C the shell took counts once a line typed after
        it, a probe, has its prompt: bash has then run all it had read. That prompt ends
        no command (``_on_data`` takes it out), even one that comes after this gave up.
        Only a stopped command pays for the looks (a few ``tcgetpgrp``), no step's path.
        """
        first = self._foreground()
        sent = {first}  # who held the terminal at each Ctrl-C
        self.interrupt()
        if first is None or self._own_group < 0:  # the terminal is gone, or not the shell's
            return await self.wait_finished(grace_s)
        need_probe = first[0] == self._own_group  # else bash had started the command
        probed = False
        deadline = time.monotonic() + grace_s
        pauses = iter(_RECHECK_S)
        look = time.monotonic() + next(pauses)
        held: float | None = None  # since when the shell holds the terminal, unprompted
        nudged = False
        result: Chunk | None = None  # the command's prompt (the probe's may be to come)
        while (now := time.monotonic()) < deadline:
            if not self._done and (result is None or self._probe is not None):
                if self._eof or self._exited:
                    raise ShellDied("the shell exited")
                await self._wait_event(min(look, deadline) - now)
            while self._done:
                chunk = self._done.popleft()
                result = chunk if result is None else join_chunks(result, chunk)
                held = None
            if result is not None:
                if result.cwd:
                    self.cwd = result.cwd
                if not need_probe or (probed and self._probe is None):
                    return result
                if not probed:  # bash prompted: has it run all it had read? a probe says
                    probed = True
                    self._probe = f"stopped:{self._nonce}".encode()
                    try:
                        await self.write(b"builtin printf %s " + self._probe + b"\n", deadline - now)
                    except TerminalStalled:
                        return result
            if (now := time.monotonic()) < look:
                continue
            look = now + next(pauses, _RECHECK_EVERY_S)
            holder = self._foreground()
            if holder is None or len(sent) + nudged > _MORE_CTRL_C:
                continue
            if holder[0] != self._own_group:
                held = None
                if holder not in sent:
                    sent.add(holder)
                    self._signal_group(holder[0])
                continue
            held = now if held is None else held
            if not nudged and result is None and now - held >= _SHELL_HELD_S:
                nudged = True
                self._signal_group(holder[0])
        if result is not None:
            self._done.appendleft(result)  # for take(): the shell is restarted
            return None
        return await self.wait_finished(0.0)

    def _foreground(self) -> tuple[int, bytes] | None:
        """Who holds the terminal: its foreground process group and the program its
        leader runs (None when the terminal is gone). Never waits: an ioctl and procfs."""
        try:
            group = os.tcgetpgrp(self._fd)
        except OSError:
            return None
        if group <= 0:  # no process group holds it (a terminal no session controls)
            return None
        try:
            with open(f"/proc/{group}/comm", "rb") as comm:
                return group, comm.read()
        except OSError:
            return group, b""  # the leader has exited (the first command of a pipeline)

    def _signal_group(self, group: int) -> None:
        """SIGINT to ``group`` itself, not through the terminal: no byte left in flight
        to reach the shell once it prompts again."""
        if group <= 0 or group == os.getpgrp():  # never this server's own
            return
        try:
            os.killpg(group, signal.SIGINT)
        except ProcessLookupError:
            pass  # it ended meanwhile
        except PermissionError:  # not ours to signal (a shell of another uid): the byte
            self.interrupt()

    # ---- output ----------------------------------------------------------------------
    def take(self) -> Chunk:
        """Everything read so far (finished commands and a partial one), as one chunk."""
        parts, omitted, status, cwd = [], 0, None, None
        while self._done:
            chunk = self._done.popleft()
            parts.append(chunk.output)
            omitted += chunk.omitted
            status, cwd = chunk.status, chunk.cwd
        self._flush_window(keep_partial=self._reading)
        data, more = self._out.take()
        parts.append(data)
        if cwd:
            self.cwd = cwd
        self._resume()
        return Chunk(b"".join(parts), omitted + more, status, cwd)

    async def wait_finished(self, timeout_s: float) -> Chunk | None:
        """The output of the next finished command, or None at ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self._done:
            if self._eof:
                raise ShellDied("the shell exited")
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            # Once the shell is gone, stop at the first pause in what is left to read.
            got = await self._wait_event(min(left, 0.05) if self._exited else left)
            if not got and self._exited and not self._done:
                raise ShellDied("the shell exited")
        chunk = self._done.popleft()
        if chunk.cwd:
            self.cwd = chunk.cwd
        return chunk

    async def wait_quiet(self, timeout_s: float, idle_s: float = 0.15) -> None:
        """Wait until output pauses for ``idle_s`` (or a command ends), at most ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self._done and not self._eof:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if not await self._wait_event(min(idle_s, left)) and (self._out.total or self._window):
                return  # output came and then stopped

    async def _wait_event(self, timeout_s: float) -> bool:
        """Wait for new output (True) or ``timeout_s`` (False)."""
        self._resume()
        self._event.clear()
        self._waiting += 1
        try:
            await asyncio.wait_for(self._event.wait(), timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            self._waiting -= 1

    # ---- reading (chunks read by the loop or the pump, on the loop) ---------------------
    def _on_data(self, data: bytes) -> None:
        if not data:
            self._eof = True
            self._pause()
            self._event.set()
            return
        self._window += data
        while match := self._mark.search(self._window):
            before = bytes(self._window[: match.start()])
            if self._probe is not None and self._probe in before:  # a probe's prompt (``stop``)
                self._out.feed(before.replace(self._probe, b""))  # no command's end
                self._probe = None
                del self._window[: match.end()]
                continue
            self._out.feed(before)
            output, omitted = self._out.take()
            cwd = match[2].decode("utf-8", errors="replace")
            self._done.append(Chunk(output, omitted, int(match[1]), cwd))
            del self._window[: match.end()]
            if self._io is not None:
                self._io.settled()  # the shell waits for input: what follows is no stream
        if len(self._window) > _WINDOW:
            self._flush_window(keep_partial=True)
        if self._out.total >= self.read_limit and not self._waiting:
            self._pause()  # nobody is waiting and the buffer is full: back-pressure
        self._event.set()

    def _flush_window(self, *, keep_partial: bool) -> None:
        """Move the window into the output, keeping a marker that may be half-read."""
        cut = len(self._window)
        if keep_partial:
            start = self._window.rfind(b"\x1e", max(0, cut - _WINDOW))
            if start >= 0:
                cut = start
        if cut:
            self._out.feed(bytes(self._window[:cut]))
            del self._window[:cut]

    def _resume(self) -> None:
        if not self._reading and self._io is not None and not self._eof:
            self._io.read(True)
            self._reading = True

    def _pause(self) -> None:
        if self._reading:
            if self._io is not None:
                self._io.read(False)
            self._reading = False


def join_chunks(first: Chunk, second: Chunk) -> Chunk:
    """Two chunks as one: the status and cwd of the later, if it has them."""
    return Chunk(
        first.output + second.output,
        first.omitted + second.omitted,
        second.status if second.status is not None else first.status,
        second.cwd or first.cwd,
    )


def _open(
    box: Sandbox | ContainerBox, argv: list[str], env: dict[str, str]
) -> tuple[int, int, subprocess.Popen[bytes]]:
    """On a worker: a terminal, and the shell started on it: its master end (non-blocking),
    its other end (the server holds it: ``_ptyio``) and the process."""
    master, slave = os.openpty()
    try:
        proc = box.popen(argv, stdin=slave, stdout=slave, stderr=slave, ctty=True, env=env)
    except BaseException:
        os.close(master)
        os.close(slave)
        raise
    os.set_blocking(master, False)
    return master, slave, proc


def _discard(started: Future[tuple[int, int, subprocess.Popen[bytes]]]) -> None:
    """A shell started for a caller that is gone (cancelled): kill it, close its terminal."""
    if started.cancelled() or started.exception() is not None:
        return
    master, slave, proc = started.result()
    os.close(master)
    os.close(slave)
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    # Not waited for here (this may run on the loop): ``subprocess`` reaps a dropped
    # Popen that was still running at its next start; the sandbox's close kills the rest.
