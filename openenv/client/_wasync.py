"""An asyncio WebSocket connection (``websockets.asyncio``) behind the transport seam.

websockets' exceptions become ours here and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from .._exceptions import ConnectError, ConnectionClosed, RequestTimeout, connection_closed
from ._transport import ConnectParams


async def connect(params: ConnectParams) -> AsyncWebSocket:
    # Imported on first use so that importing the client stays light.
    from websockets.asyncio.client import connect as ws_connect

    try:
        ws = await ws_connect(
            params.url,
            subprotocols=params.subprotocols or None,  # type: ignore[arg-type]
            additional_headers=dict(params.headers) or None,
            compression=None,
            max_size=params.max_size,
            open_timeout=params.connect_timeout_s,
            ping_interval=20,
            ping_timeout=20,
        )
    except TimeoutError:
        raise ConnectError(
            f"cannot connect to {params.url}: no handshake within {params.connect_timeout_s:g} s"
        ) from None
    except OSError as exc:
        raise ConnectError(f"cannot connect to {params.url}: {exc}") from None
    except Exception as exc:  # websockets' handshake errors
        raise ConnectError(f"handshake with {params.url} failed: {exc}") from None
    return AsyncWebSocket(ws)


class AsyncWebSocket:
    """One client WebSocket on the running event loop."""

    def __init__(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed as WSClosed

        self._ws = ws
        self._closed_exc: type[Exception] = WSClosed
        self.subprotocol: str | None = ws.subprotocol

    def _mapped(self, exc: Any) -> ConnectionClosed | Exception:
        rcvd = exc.rcvd
        return connection_closed(rcvd.code if rcvd else None, rcvd.reason if rcvd else "")

    async def send(self, frame: str | bytes) -> None:
        try:
            await self._ws.send(frame)
        except self._closed_exc as exc:
            raise self._mapped(exc) from None

    async def recv(self, timeout_s: float) -> str | bytes:
        try:
            async with asyncio.timeout(timeout_s):
                return await self._ws.recv()  # type: ignore[no-any-return]
        except TimeoutError:
            raise RequestTimeout(f"no reply within {timeout_s:g} s") from None
        except self._closed_exc as exc:
            raise self._mapped(exc) from None

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._ws.close()
