"""Clients: ``EnvClient`` (blocking) and ``AsyncEnvClient`` (asyncio), one model layer.

``AsyncEnvClient`` is loaded on first use, so sync users never import asyncio.
"""

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports
from ._base import BaseEnvClient, ws_url
from ._batch import BatchItem, Close, GetState, Reset, Step
from ._sync import EnvClient
from ._transport import ConnectParams
from ._websocket import WebSocketTransport

if _typing.TYPE_CHECKING:
    from ._asgi import ASGITransport
    from ._async import AsyncEnvClient

__all__ = [
    "ASGITransport",
    "AsyncEnvClient",
    "BaseEnvClient",
    "BatchItem",
    "Close",
    "ConnectParams",
    "EnvClient",
    "GetState",
    "Reset",
    "Step",
    "WebSocketTransport",
    "ws_url",
]


__getattr__, __dir__ = _lazy_exports(
    __name__, {"AsyncEnvClient": "._async", "ASGITransport": "._asgi"}, __all__
)
