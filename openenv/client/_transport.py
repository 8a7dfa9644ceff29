"""The transport seam: how a client opens a connection and moves frames.

A transport is an object with ``connect(params)`` (sync clients) and/or
``aconnect(params)`` (async clients) returning a connection with three methods:

    send(frame)            -> None   raises ConnectionClosed / FrameTooLarge
    recv(timeout_s)        -> frame  raises RequestTimeout / ConnectionClosed / FrameTooLarge
    close()                -> None   never raises

(awaited on async connections) plus a ``subprotocol`` attribute. Errors are already
ours: the transport maps its library's exceptions at this boundary, once.
``WebSocketTransport`` (``_websocket.py``) is the default (real sockets);
``ASGITransport`` (``openenv.client.ASGITransport``) runs a server app in-process,
without sockets. This module only describes the seam: it imports no transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ConnectParams:
    """What a client asks of a transport when it connects."""

    url: str
    subprotocols: list[str] = field(default_factory=list)
    headers: Mapping[str, str] = field(default_factory=dict)
    max_size: int = 100 * 1024 * 1024
    connect_timeout_s: float = 10.0


class Connection(Protocol):
    subprotocol: str | None

    def send(self, frame: str | bytes) -> None: ...
    def recv(self, timeout_s: float) -> str | bytes: ...
    def close(self) -> None: ...


class AsyncConnection(Protocol):
    subprotocol: str | None

    async def send(self, frame: str | bytes) -> None: ...
    async def recv(self, timeout_s: float) -> str | bytes: ...
    async def close(self) -> None: ...


class Transport(Protocol):
    def connect(self, params: ConnectParams) -> Connection: ...
    async def aconnect(self, params: ConnectParams) -> AsyncConnection: ...
