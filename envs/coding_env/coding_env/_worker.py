"""The server's side of one persistent Python worker, started in its own sandbox."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from openenv.sandbox import Sandbox, SandboxConfig, SandboxError

from ._channel import Channel, ChannelBroken, encode

_WORKER_SOURCE = resources.files(__package__).joinpath("_worker_main.py").read_text()


class WorkerLost(Exception):
    """The worker died, broke the protocol, or had to be killed; its state is gone.
    ``timed_out``: it was killed because a cell ignored the interrupt."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def default_python() -> tuple[str, tuple[str, ...]]:
    """An interpreter every sandbox uid can run, and the host paths it needs.

    The worker needs only the standard library. The server's own interpreter is used
    when it lives under ``/usr`` (Docker images); otherwise (pyenv under ``/root``)
    the system ``/usr/bin/python3``, else the server's with its prefix shown read-only.
    """
    own = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    if own.startswith("/usr/"):
        return own, ()
    if os.path.exists("/usr/bin/python3"):
        return "/usr/bin/python3", ()
    return own, (sys.base_prefix,)


@dataclass(frozen=True, slots=True)
class Reply:
    """One cell's outcome, as the worker reported it (``timed_out`` added here)."""

    stdout: str
    stderr: str
    result: str | None
    exception: dict[str, str] | None
    stdout_omitted_bytes: int
    stderr_omitted_bytes: int
    duration_s: float
    timed_out: bool = False


class Worker:
    """One sandbox running the worker; ``run`` a cell with interrupt-then-kill timeouts.

    Thread-safe for one caller of ``run`` plus any caller of ``interrupt``/``kill``/
    ``close``. No call waits on the worker past its deadline, and ``interrupt`` waits
    on nothing at all (the server calls it on its event loop).
    """

    def __init__(
        self,
        config: SandboxConfig,
        *,
        python: str,
        env: dict[str, str] | None = None,
        start_timeout_s: float = 30.0,
        max_reply: int = 1 << 20,
        track: Callable[[Worker], None] | None = None,
    ) -> None:
        self._life_lock = threading.Lock()  # kill() never reaches a sandbox close() gave back
        self.sandbox = Sandbox(config)
        self._intr_lock = threading.Lock()  # held for one non-blocking write or close only
        self._busy = False
        self._seq = 0
        intr_r, self._intr = os.pipe()
        try:
            try:
                if track is not None:
                    track(self)  # from here on a kill() (the server stopping) ends the start too
                with self._life_lock:  # a kill() meanwhile waits for the process, then kills it
                    self.proc = self.sandbox.popen(
                        [python, "-I", "-u", "-c", _WORKER_SOURCE],
                        env={**(env or {}), "CODING_ENV_INTERRUPT_FD": str(intr_r)},
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL,
                        pass_fds=(intr_r,),
                    )
            except SandboxError as exc:
                if not self.sandbox.closed:
                    raise
                raise WorkerLost("the worker was stopped while it started") from exc
            finally:
                os.close(intr_r)
            os.set_blocking(self._intr, False)
            self._channel = Channel.to_process(self.proc, max_frame=max_reply)
            hello = self._recv(0, time.monotonic() + start_timeout_s)
            if hello is None or hello.get("op") != "ready":
                raise WorkerLost(f"the worker did not start within {start_timeout_s:g} s")
        except BaseException:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        return not self.sandbox.closed and self.proc.poll() is None

    def run(self, code: str, *, timeout_s: float, grace_s: float, count: int | None = None) -> Reply:
        """Run one cell. Past ``timeout_s`` interrupt it; past ``grace_s`` more, kill
        the worker and raise ``WorkerLost`` (also when it stops reading the cell)."""
        start = time.monotonic()
        self._busy = True
        self._seq += 1
        seq = self._seq
        try:
            try:
                frame = encode({"op": "exec", "code": code, "count": count}, seq)
                self._channel.send(frame, start + timeout_s + grace_s)
            except ChannelBroken as broken:
                self.close()
                raise WorkerLost(broken.about("the worker"), timed_out=broken.timed_out) from None
            reply = self._recv(seq, start + timeout_s)
            timed_out = reply is None
            if timed_out:  # again every 50 ms: one sent before the cell began is dropped
                end = time.monotonic() + grace_s
                try:
                    while reply is None and time.monotonic() < end:
                        self.interrupt()
                        reply = self._recv(seq, min(end, time.monotonic() + 0.05))
                except WorkerLost as lost:  # lost while being interrupted: the cell still overran
                    raise WorkerLost(str(lost), timed_out=True) from None
            if reply is None:
                self.close()
                raise WorkerLost(
                    f"the cell ran past {timeout_s:g} s and ignored the interrupt for {grace_s:g} s",
                    timed_out=True,
                )
        finally:
            self._busy = False
        return _reply(reply, time.monotonic() - start, timed_out)

    def interrupt(self) -> None:
        """Raise ``KeyboardInterrupt`` in the running cell (no-op when idle or dead).
        Never blocks: one non-blocking write to the interrupt pipe."""
        with self._intr_lock:  # close() cannot free the fd number under us
            if self._busy and self._intr >= 0:
                with contextlib.suppress(OSError):  # gone, or a full pipe of interrupts
                    os.write(self._intr, b"\x03")

    def kill(self) -> None:
        """Kill every process of the worker and give its sandbox back (directory,
        cgroup, mount, uid), from any thread, leaving only its pipes to ``close``: a
        ``run`` in progress sees the worker gone at once and raises ``WorkerLost``
        (server shutdown must not wait for a cell, nor leave a sandbox behind)."""
        with self._life_lock:
            self.sandbox.close()

    def close(self) -> None:
        """Kill every process of the worker and delete its sandbox. Idempotent."""
        proc = getattr(self, "proc", None)
        with self._life_lock:
            self.sandbox.close()
        with self._intr_lock:
            if self._intr >= 0:
                os.close(self._intr)
                self._intr = -1
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    def _recv(self, seq: int, deadline: float) -> dict[str, Any] | None:
        """The reply to request ``seq`` (``0``: the hello), or None at deadline;
        ``WorkerLost`` (the worker closed) when the channel breaks."""
        try:
            frame = self._channel.recv(seq, deadline)
        except ChannelBroken as broken:
            self.close()
            raise WorkerLost(broken.about("the worker")) from None
        if frame is not None and seq and frame.get("op") != "result":
            self.close()
            raise WorkerLost("the worker sent a frame it was not asked for")
        return frame


def _reply(reply: dict[str, Any], duration_s: float, timed_out: bool) -> Reply:
    """A ``Reply`` of what the worker sent, each field checked for its type."""
    exc = reply.get("exception")
    if exc is not None:
        raw = exc if isinstance(exc, dict) else {}
        exc = {k: _text(raw.get(k)) for k in ("type", "message", "traceback")}
        exc["type"] = exc["type"] or "MalformedReply"
    result = reply.get("result")
    return Reply(
        stdout=_text(reply.get("stdout")),
        stderr=_text(reply.get("stderr")),
        result=result if isinstance(result, str) else None,
        exception=exc,
        stdout_omitted_bytes=_count(reply.get("stdout_omitted_bytes")),
        stderr_omitted_bytes=_count(reply.get("stderr_omitted_bytes")),
        duration_s=duration_s,
        timed_out=timed_out,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int:
    return value if type(value) is int and 0 <= value < 1 << 62 else 0
