"""Run every client test twice: over real sockets and over the in-process ASGI transport.

Tests marked ``socket_only`` test the socket itself (frame limits enforced by the
server's WebSocket stack, pings, connect errors, raw frames) and run over sockets only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from openenv.client import ASGITransport, ConnectParams, WebSocketTransport, _base

from ..conftest import LIVE_SERVERS


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "client_transport" in metafunc.fixturenames:
        socket_only = metafunc.definition.get_closest_marker("socket_only") is not None
        kinds = ["socket"] if socket_only else ["socket", "in-process"]
        metafunc.parametrize("client_transport", kinds, indirect=True)


class InProcess:
    """Connects clients to the app of the live test server their URL names, in-process
    (the server's own uvicorn runs the app's lifespan)."""

    def __init__(self) -> None:
        self._sync: dict[int, ASGITransport] = {}
        self._fallback = WebSocketTransport()

    def _app(self, params: ConnectParams) -> Any:
        server = LIVE_SERVERS.get(urlsplit(params.url).port or 0)
        return None if server is None else server.app

    def connect(self, params: ConnectParams) -> Any:
        app = self._app(params)
        if app is None:
            return self._fallback.connect(params)
        port = urlsplit(params.url).port or 0
        transport = self._sync.get(port)
        if transport is None or transport.app is not app:
            transport = self._sync[port] = ASGITransport(app, lifespan=False)
        return transport.connect(params)

    async def aconnect(self, params: ConnectParams) -> Any:
        app = self._app(params)
        if app is None:
            return await self._fallback.aconnect(params)
        return await ASGITransport(app, lifespan=False).aconnect(params)

    def close(self) -> None:
        for transport in self._sync.values():
            transport.close()


@pytest.fixture(autouse=True)
def client_transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "socket":
        yield "socket"
        return
    router = InProcess()
    monkeypatch.setattr(_base, "DEFAULT_TRANSPORT", router)
    yield "in-process"
    router.close()
