"""A background server's accepted connections have Nagle off (TCP_NODELAY), as the capture
proxy's (tests/capture/test_server_socket.py): uvicorn writes a reply's head and body apart,
and on a socket of proto 0 (which asyncio does not set TCP_NODELAY on) the body waited for
the client's delayed ACK, about 40 ms a call on loopback."""

from __future__ import annotations

import httpx
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from openenv.server._background import BackgroundServer
from tests._served import assert_open_connections_have_nodelay


async def _ok(request: object) -> JSONResponse:
    return JSONResponse({"ok": True})


def test_accepted_connections_have_nodelay() -> None:
    app = Starlette(routes=[Route("/", _ok, methods=["POST"])])
    with BackgroundServer(app) as server, httpx.Client(timeout=10) as client:
        assert client.post(server.url + "/", json={}).status_code == 200
        assert_open_connections_have_nodelay(server._server)
