"""The proxy's accepted connections have Nagle off (TCP_NODELAY). uvicorn writes a reply's
head and body apart; with Nagle on, the body waited for the client's delayed ACK, about
40 ms a call on loopback (the proxy was bound on a socket of proto 0, which asyncio does
not set TCP_NODELAY on)."""

from __future__ import annotations

import httpx

from openenv.capture import CaptureServer
from tests._served import assert_open_connections_have_nodelay


def test_accepted_connections_have_nodelay(proxy: CaptureServer) -> None:
    with httpx.Client(timeout=10) as client:
        assert client.get(proxy.url + "/health").status_code == 200
        assert_open_connections_have_nodelay(proxy._server)
