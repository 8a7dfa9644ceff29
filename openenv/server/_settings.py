"""Server settings: one object, read from ``OPENENV_*`` environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Everything a server can be told. Each field reads ``OPENENV_<FIELD>``.

    Attributes:
        host: interface to bind. ``0.0.0.0`` in containers; loopback otherwise.
        port: TCP port.
        workers: server processes; WebSocket sessions are spread across them.
        max_sessions: concurrent sessions per process (WS and HTTP together).
        idle_timeout_s: a session idle this long is closed, and its socket with it.
            ``0`` disables the reaper.
        max_frame_bytes: largest WebSocket frame accepted; larger ones close the
            socket with code 1009.
        ping_interval_s / ping_timeout_s: WebSocket keepalive that finds half-open
            sockets. ``0`` disables it.
        slow_call_s: an ``Execution.AUTO`` env whose call takes longer than this moves
            to worker threads.
        thread_workers: size of the shared pool for ``Execution.THREAD`` envs.
        log_level: uvicorn/our log level.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    max_sessions: int = 1024
    idle_timeout_s: float = 600.0
    max_frame_bytes: int = 16 * 1024 * 1024
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 20.0
    slow_call_s: float = 0.002
    thread_workers: int = 32
    log_level: str = "warning"

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> ServerSettings:
        """Defaults, then ``OPENENV_*`` variables, then ``overrides`` (None ignored)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f"OPENENV_{f.name.upper()}")
            if raw is None:
                continue
            kind = type(getattr(cls(), f.name))
            try:
                values[f.name] = kind(raw)
            except ValueError:
                raise ValueError(f"OPENENV_{f.name.upper()}={raw!r} is not a valid {kind.__name__}") from None
        values.update({k: v for k, v in overrides.items() if v is not None})
        return replace(cls(), **values).validated()

    def validated(self) -> ServerSettings:
        if self.max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if self.max_frame_bytes < 1024:
            raise ValueError("max_frame_bytes must be at least 1024")
        return self

    def to_env(self) -> dict[str, str]:
        """The settings as ``OPENENV_*`` variables, for worker processes."""
        return {f"OPENENV_{f.name.upper()}": str(getattr(self, f.name)) for f in fields(self)}
