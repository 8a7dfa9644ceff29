"""Run an env as a local ``openenv serve`` process."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Mapping

from ._base import Provider, ReplicaBase


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class ProcessReplica(ReplicaBase):
    """An ``openenv serve`` child process in its own process group."""

    def __init__(self, proc: subprocess.Popen[bytes], base_url: str, log_path: str) -> None:
        self.proc = proc
        self.base_url = base_url
        self.log_path = log_path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def logs(self, tail: int = 50) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(deque(f, maxlen=tail))
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            os.unlink(self.log_path)


class LocalProcessProvider(Provider):
    """Start envs as local processes: ``python -m openenv serve TARGET --port P``.

    Args:
        target: what ``openenv serve`` takes (``module:Class``, an env folder, a name).
        env: extra environment variables (e.g. ``OPENENV_MAX_SESSIONS``).
        python: the interpreter (default: this one).
        start_timeout_s: how long to wait for ``/health``.
    """

    def __init__(
        self,
        target: str,
        *,
        env: Mapping[str, str] | None = None,
        python: str = sys.executable,
        start_timeout_s: float = 30.0,
        workers: int = 1,
    ) -> None:
        self.target = target
        self.env = dict(env or {})
        self.python = python
        self.start_timeout_s = start_timeout_s
        self.workers = workers

    def start(self) -> ProcessReplica:
        port = free_port()
        fd, log_path = tempfile.mkstemp(prefix="openenv-serve-", suffix=".log")
        argv = [
            self.python,
            "-m",
            "openenv",
            "serve",
            self.target,
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--workers",
            str(self.workers),
        ]
        with os.fdopen(fd, "wb") as log:
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        replica = ProcessReplica(proc, f"http://127.0.0.1:{port}", log_path)
        replica.wait_ready(self.start_timeout_s, f"openenv serve {self.target}")
        return replica
