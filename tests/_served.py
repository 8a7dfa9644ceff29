"""Wait for a server a test started as a child process: the product's one health wait
(``openenv.containers.wait_healthy``), failing with the child's output once it has exited."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from openenv.containers import wait_healthy


def wait_served(
    url: str, proc: subprocess.Popen[Any], timeout_s: float = 60.0, what: str = "the server",
    log: Path | None = None,
) -> None:  # fmt: skip
    """Until ``{url}/health`` answers 200; ``StartupFailed`` if ``proc`` exits first or
    ``timeout_s`` passes, with the tail of ``log`` (the file its output goes to) or else of
    its piped stderr (or stdout) once it has exited."""

    def output() -> str:
        if log is not None:
            return log.read_text(errors="replace")[-3000:]
        pipe = proc.stderr or proc.stdout
        if proc.poll() is None or pipe is None:  # a running server's pipe never ends
            return "(still running)"
        text = pipe.read()
        return (text.decode(errors="replace") if isinstance(text, bytes) else text)[-3000:]

    wait_healthy(url, timeout_s=timeout_s, alive=lambda: proc.poll() is None, logs=output, what=what)


def stop_child(proc: subprocess.Popen[Any], grace_s: float = 10.0, *, group: bool = False) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``grace_s``; reaped either way.
    ``group``: signal its whole process group (a child started with ``start_new_session``)."""

    def send(sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)

    send(signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait(10)


class LoopbackUrls:
    """``url`` and ``ws_url`` of a server listening on 127.0.0.1:``port``."""

    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"


def assert_open_connections_have_nodelay(server: Any) -> None:
    """Every connection a uvicorn ``server`` holds open has Nagle off (TCP_NODELAY): a
    reply's head and body are written apart, and with Nagle on the body waited for the
    client's delayed ACK (about 40 ms a call on loopback)."""
    import socket

    ours = [
        c.transport.get_extra_info("socket")
        for c in server.server_state.connections
        if c.transport is not None and not c.transport.is_closing()
    ]
    assert ours, "the client's keep-alive connection is open on the server"
    for sock in ours:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
