"""Raw-socket tools for the network-limit tests: hand-made frames, close codes, RSS,
and ``openenv serve`` in a child process (so its memory is its own).

Every wait is bounded; every child is stopped by PID at teardown.
"""

from __future__ import annotations

import os
import resource
import select
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from .._served import LoopbackUrls, wait_served
from ..conftest import free_port

TEXT, BINARY, CONT = 0x1, 0x2, 0x0


def frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """One client (masked) frame; the mask is zero, so the payload goes as it is."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += struct.pack("!BH", 0x80 | 126, n)
    else:
        head += struct.pack("!BQ", 0x80 | 127, n)
    return head + b"\0\0\0\0" + payload


def server_frames(data: bytes) -> list[tuple[int, bytes]]:
    """``(opcode, payload)`` of each whole (unmasked) server frame in ``data``."""
    out, pos = [], 0
    while len(data) - pos >= 2:
        n, start = data[pos + 1] & 0x7F, pos + 2
        if n == 126:
            n, start = struct.unpack("!H", data[pos + 2 : pos + 4])[0], pos + 4
        elif n == 127:
            n, start = struct.unpack("!Q", data[pos + 2 : pos + 10])[0], pos + 10
        if start + n > len(data):
            break
        out.append((data[pos] & 0x0F, data[start : start + n]))
        pos = start + n
    return out


def read_until_closed(sock: socket.socket, timeout_s: float = 10.0) -> bytes:
    """Everything the server sends until it closes the socket (or ``timeout_s``)."""
    data, deadline = b"", time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            break
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def close_code(data: bytes) -> int | None:
    """The code of the close frame in what the server sent (None: no close frame)."""
    for opcode, payload in server_frames(data):
        if opcode == 0x8 and len(payload) >= 2:
            return int(struct.unpack("!H", payload[:2])[0])
    return None


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def cpu_s(pid: int) -> float:
    """CPU seconds ``pid`` has used (user + system, all its threads): unlike elapsed
    time, a loaded host does not inflate it."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid: int) -> int:
    """How many descriptors ``pid`` holds (its connections among them)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def raise_nofile(want: int) -> int:
    """Raise this process's soft open-files limit toward ``want`` (never past the hard
    limit); returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, want), hard) if hard != resource.RLIM_INFINITY else max(soft, want)
    if target != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


@dataclass
class Served(LoopbackUrls):
    """``openenv serve echo`` in a child process."""

    proc: subprocess.Popen[bytes]
    port: int

    @property
    def pid(self) -> int:
        return self.proc.pid



def _limit_files(n: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return apply


@pytest.fixture
def served() -> Iterator[Any]:
    """``served(nofile=None, **OPENENV settings) -> Served``: the echo env under
    ``openenv serve`` at its defaults but for the settings given (and an open-files
    limit, soft and hard, when ``nofile`` is set)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(nofile: int | None = None, **settings: Any) -> Served:
        port = free_port()
        env = {**os.environ, "OPENENV_LOG_LEVEL": "warning"}
        env.update({f"OPENENV_{k.upper()}": str(v) for k, v in settings.items()})
        argv = [sys.executable, "-m", "openenv", "serve", "echo", "--host", "127.0.0.1", "--port", str(port)]
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=_limit_files(nofile) if nofile else None,
        )
        procs.append(proc)
        wait_served(f"http://127.0.0.1:{port}", proc, 30, "openenv serve")
        return Served(proc, port)

    yield start
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
