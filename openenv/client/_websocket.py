"""``WebSocketTransport``: the default transport, real WebSockets over real sockets."""

from __future__ import annotations

from typing import Any

from ._transport import AsyncConnection, Connection, ConnectParams


class WebSocketTransport:
    """Real WebSockets: websockets' sans-I/O protocol for the handshake and our
    ``Framer`` after it, on a blocking socket for sync clients (``_ws_blocking.py``) and on
    an asyncio Protocol for async ones (``_ws_asyncio.py``, imported on first use, so sync
    users never import asyncio)."""

    def connect(self, params: ConnectParams) -> Connection:
        from ._ws_blocking import SyncWebSocket

        return SyncWebSocket(
            params.url,
            subprotocols=params.subprotocols,
            headers=params.headers,
            max_size=params.max_size,
            connect_timeout_s=params.connect_timeout_s,
        )

    async def aconnect(self, params: ConnectParams) -> AsyncConnection:
        from ._ws_asyncio import connect

        return await connect(params)


DEFAULT_TRANSPORT: Any = WebSocketTransport()
