"""Server settings: one object, read from ``OPENENV_*`` environment variables."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields, replace
from typing import Any

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def _parse(name: str, kind: type, raw: str) -> Any:
    var = f"OPENENV_{name.upper()}"
    if kind is bool:
        low = raw.strip().lower()
        if low in _TRUE or low in _FALSE:
            return low in _TRUE
        raise ValueError(f"{var}={raw!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")
    if kind is dict:
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"{var} is not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError(f"{var} must be a JSON object, not {type(value).__name__}")
        return value
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{var}={raw!r} is not a valid {kind.__name__}") from None


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Everything a server can be told. Each field reads ``OPENENV_<FIELD>``.

    Attributes:
        host: interface to bind. ``0.0.0.0`` in containers; loopback otherwise.
        port: TCP port.
        workers: server processes; WebSocket sessions are spread across them.
        max_sessions: concurrent sessions per process (WS and HTTP together).
        max_sessions_per_client: concurrent sessions one client (peer address) may hold
            per process; more are refused with ``QuotaExceeded`` (429). ``-1`` (the
            default): a quarter of ``max_sessions`` (rounded down) is kept for other
            clients, so one client cannot take every slot of a server with 4 or more;
            ``0``: no quota. See ``client_quota``.
        auth_token: when set, every request and WebSocket handshake (``/mcp``
            included) must carry ``Authorization: Bearer <token>``; others get
            ``Unauthorized`` (401). ``/health`` stays open. Empty: no auth.
        allowed_hosts: comma-separated ``Host`` names served besides loopback names,
            IP addresses, names without a dot and the bound name (a DNS-rebinding
            guard); ``*``: any. Empty
            (the default): on a loopback bind, those only; on any other bind, any.
        allowed_origins: comma-separated origins (``scheme://host[:port]``) whose
            browser pages may use the server besides its own (``/web``); ``*``: any.
            A request with another ``Origin`` is refused with ``Forbidden`` (403);
            one without (Python clients) is not a browser's and is served.
        forwarded_allow_ips: comma-separated addresses of trusted proxies, whose
            ``X-Forwarded-For`` names the client (its quota); ``*``: any. Empty (the
            default): no forwarding header is trusted, the peer is the socket's.
        idle_timeout_s: a session idle this long is closed, and its socket with it;
            so is a WebSocket with no session that sends nothing this long. ``0``
            disables the reaper.
        header_timeout_s: an HTTP request (a WebSocket handshake too) must send its
            whole head within this, from its first byte or the last response.
        message_timeout_s: a WebSocket message must arrive whole within this once
            its first byte has (fragments or one frame trickling in); else 1008.
        max_connections_per_client: open TCP connections one peer address may hold;
            past it a connection may only ask ``GET /health`` (others get 503). Also
            capped below the process's open-files limit.
        max_frame_bytes: largest WebSocket frame accepted; larger ones close the
            socket with code 1009. Also the largest HTTP request body: a larger one is
            answered ``413`` before it is read.
        ping_interval_s / ping_timeout_s: WebSocket keepalive that finds half-open
            sockets. ``0`` disables it.
        slow_call_s: an ``Execution.AUTO`` env call proven faster than this (off the
            loop, several times in a row) runs on the event loop; slower calls on the
            loop (three close together, or one 25 times slower) send that method back
            to worker threads (see RFC 0001, section 8).
        thread_workers: size of the shared pool for ``Execution.THREAD`` envs.
        call_timeout_s: default deadline of every env call (reset, step, state, tool
            call); an env's ``call_timeout_s`` or a request's ``timeout_s`` overrides it.
            ``0`` disables it. Calls on the event loop (``INLINE``) cannot be cut off.
        max_call_timeout_s: the largest ``timeout_s`` a request may ask for.
        interrupt_grace_s: after a deadline, how long an interrupted call may take to
            return before its session is closed.
        env_kwargs: constructor arguments of every session's env (JSON in
            ``OPENENV_ENV_KWARGS``).
        web: serve the web playground at ``/web``.
        log_level: uvicorn/our log level.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    max_sessions: int = 1024
    max_sessions_per_client: int = -1
    auth_token: str = field(default="", repr=False)
    allowed_hosts: str = ""
    allowed_origins: str = ""
    forwarded_allow_ips: str = ""
    idle_timeout_s: float = 600.0
    header_timeout_s: float = 10.0
    message_timeout_s: float = 60.0
    max_connections_per_client: int = 2048
    max_frame_bytes: int = 16 * 1024 * 1024
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 20.0
    slow_call_s: float = 0.002
    thread_workers: int = 32
    call_timeout_s: float = 300.0
    max_call_timeout_s: float = 3600.0
    interrupt_grace_s: float = 1.0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    web: bool = True
    log_level: str = "warning"

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> ServerSettings:
        """Defaults, then ``OPENENV_*`` variables, then ``overrides`` (None ignored)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        defaults = cls()
        for f in fields(cls):
            raw = env.get(f"OPENENV_{f.name.upper()}")
            if raw is not None:
                values[f.name] = _parse(f.name, type(getattr(defaults, f.name)), raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return replace(cls(), **values).validated()

    def validated(self) -> ServerSettings:
        if self.max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if self.max_sessions_per_client < -1:
            raise ValueError(
                "max_sessions_per_client must be >= -1 (-1: three quarters of max_sessions; 0: no quota)"
            )
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if self.max_frame_bytes < 1024:
            raise ValueError("max_frame_bytes must be at least 1024")
        if self.header_timeout_s <= 0 or self.message_timeout_s <= 0 or self.max_connections_per_client < 1:
            raise ValueError("header_timeout_s, message_timeout_s and max_connections_per_client must be > 0")
        if self.call_timeout_s < 0 or self.interrupt_grace_s < 0:
            raise ValueError("call_timeout_s and interrupt_grace_s must be >= 0")
        return self

    @property
    def client_quota(self) -> int:
        """The sessions one client may hold (``0``: no quota), ``-1`` resolved."""
        if self.max_sessions_per_client == -1:
            return self.max_sessions - self.max_sessions // 4
        return self.max_sessions_per_client

    def to_env(self) -> dict[str, str]:
        """The settings as ``OPENENV_*`` variables, for worker processes."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f"OPENENV_{f.name.upper()}"] = json.dumps(value) if isinstance(value, dict) else str(value)
        return out
