"""The proxy's accepted connections have Nagle off (TCP_NODELAY). uvicorn writes a reply's
head and body apart; with Nagle on, the body waited for the client's delayed ACK, about
40 ms a call on loopback (the proxy was bound on a socket of proto 0, which asyncio does
not set TCP_NODELAY on)."""

from __future__ import annotations

import socket

import httpx

from openenv.capture import CaptureServer


def test_accepted_connections_have_nodelay(proxy: CaptureServer) -> None:
    with httpx.Client(timeout=10) as client:
        assert client.get(proxy.url + "/health").status_code == 200
        ours = [
            c.transport.get_extra_info("socket")
            for c in proxy._server.server_state.connections
            if c.transport is not None and not c.transport.is_closing()
        ]
        assert ours, "the client's keep-alive connection is open on the server"
        for sock in ours:
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
