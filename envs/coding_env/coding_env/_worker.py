"""The server's side of one persistent Python worker, started in its own sandbox."""

from __future__ import annotations

import contextlib
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

from openenv.sandbox import Sandbox, SandboxConfig

_MAX_FRAME = 8 << 20
_POLL_S = 0.25  # how often a wait for a reply checks that the worker is still alive
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

    Thread-safe for one caller of ``run`` plus any caller of ``interrupt``/``close``.
    """

    def __init__(
        self,
        config: SandboxConfig,
        *,
        python: str,
        env: dict[str, str] | None = None,
        start_timeout_s: float = 30.0,
    ) -> None:
        self._life_lock = threading.Lock()  # kill() never reaches a sandbox close() gave back
        self.sandbox = Sandbox(config)
        self._write_lock = threading.Lock()
        self._buf = bytearray()
        self._busy = False
        self._seq = 0
        intr_r, self._intr = os.pipe()
        try:
            try:
                self.proc = self.sandbox.popen(
                    [python, "-I", "-u", "-c", _WORKER_SOURCE],
                    env={**(env or {}), "CODING_ENV_INTERRUPT_FD": str(intr_r)},
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    pass_fds=(intr_r,),
                )
            finally:
                os.close(intr_r)
            os.set_blocking(self._intr, False)
            assert self.proc.stdin is not None
            assert self.proc.stdout is not None
            self._out = self.proc.stdout.fileno()
            hello = self._read_frame(time.monotonic() + start_timeout_s)
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
        the worker and raise ``WorkerLost``. ``count`` names the cell in tracebacks."""
        start = time.monotonic()
        self._busy = True
        self._seq += 1
        try:
            self._send({"op": "exec", "code": code, "id": self._seq, "count": count})
            reply = self._read_reply(start + timeout_s)
            timed_out = reply is None
            if timed_out:
                self.interrupt()
                reply = self._read_reply(time.monotonic() + grace_s)
            if reply is None:
                self.close()
                raise WorkerLost(
                    f"the cell ran past {timeout_s:g} s and ignored the interrupt for {grace_s:g} s",
                    timed_out=True,
                )
        finally:
            self._busy = False
        return Reply(
            stdout=str(reply.get("stdout", "")),
            stderr=str(reply.get("stderr", "")),
            result=reply.get("result"),
            exception=reply.get("exception"),
            stdout_omitted_bytes=int(reply.get("stdout_omitted_bytes", 0)),
            stderr_omitted_bytes=int(reply.get("stderr_omitted_bytes", 0)),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
        )

    def interrupt(self) -> None:
        """Raise ``KeyboardInterrupt`` in the running cell (no-op when idle or dead)."""
        with self._write_lock:  # close() cannot free the fd number under us
            if self._busy and self._intr >= 0:
                with contextlib.suppress(OSError):  # gone, or a full pipe of interrupts
                    os.write(self._intr, b"\x03")

    def kill(self) -> None:
        """Kill every process of the worker, from any thread, leaving its pipes and
        sandbox directory to ``close``: a ``run`` in progress sees the worker gone at
        once and raises ``WorkerLost`` (server shutdown must not wait for a cell)."""
        with self._life_lock:
            if not self.sandbox.closed:
                self.sandbox.kill()

    def close(self) -> None:
        """Kill every process of the worker and delete its sandbox. Idempotent."""
        proc = getattr(self, "proc", None)
        with self._life_lock:
            self.sandbox.close()
        with self._write_lock:
            if self._intr >= 0:
                os.close(self._intr)
                self._intr = -1
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    stream.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    # ---- framing ---------------------------------------------------------------
    def _send(self, obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode()
        with self._write_lock:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(struct.pack(">I", len(body)) + body)
                self.proc.stdin.flush()
            except (OSError, ValueError) as exc:
                raise WorkerLost(f"the worker is gone ({exc})") from None

    def _read_reply(self, deadline: float) -> dict[str, Any] | None:
        """The reply to the current cell (stale ones are dropped), or None at deadline."""
        while True:
            frame = self._read_frame(deadline)
            if frame is None or frame.get("id") == self._seq:
                return frame

    def _read_frame(self, deadline: float) -> dict[str, Any] | None:
        """The next frame, or None at ``deadline``; ``WorkerLost`` on EOF or garbage."""
        while True:
            if len(self._buf) >= 4:
                size = struct.unpack(">I", self._buf[:4])[0]
                if size > _MAX_FRAME:
                    self.close()
                    raise WorkerLost("the worker sent a malformed reply")
                if len(self._buf) >= 4 + size:
                    body = bytes(self._buf[4 : 4 + size])
                    del self._buf[: 4 + size]
                    try:
                        frame = json.loads(body)
                    except ValueError:
                        frame = None
                    if not isinstance(frame, dict):
                        self.close()
                        raise WorkerLost("the worker sent a malformed reply")
                    return frame
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._out], [], [], min(left, _POLL_S))
            if not ready:
                if self.proc.poll() is not None:  # a forked child may hold the pipe open
                    self.close()
                    raise WorkerLost("the worker exited")
                continue
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                self.close()
                raise WorkerLost("the worker exited")
            self._buf += chunk
