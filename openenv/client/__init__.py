"""Clients: ``EnvClient`` (blocking) and ``AsyncEnvClient`` (asyncio), one model layer.

``AsyncEnvClient`` is loaded on first use, so sync users never import asyncio.
"""

import typing as _typing

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


def __getattr__(name: str) -> _typing.Any:
    if name == "AsyncEnvClient":
        from ._async import AsyncEnvClient

        return AsyncEnvClient
    if name == "ASGITransport":
        from ._asgi import ASGITransport

        return ASGITransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
