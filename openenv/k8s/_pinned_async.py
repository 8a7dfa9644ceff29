"""``PinnedAsyncClient``: ``PinnedClient`` for ``AsyncEnvClient`` (imported on first use,
as the async client is)."""

from __future__ import annotations

import asyncio
from typing import Any, Self, TypeVar

from .._exceptions import TransportError
from .._protocol import AnyReply
from ..client._async import AsyncEnvClient
from ..containers import PoolLease
from ._pinned import lost

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


class PinnedAsyncClient(AsyncEnvClient[ActT, ObsT, StateT]):
    """An ``AsyncEnvClient`` on one pool replica: a transport failure while the replica
    does not answer ``/health`` becomes ``ReplicaLost`` (checked off the event loop)."""

    lease: PoolLease | None = None

    async def connect(self) -> Self:
        try:
            return await super().connect()
        except TransportError as exc:
            raise await asyncio.to_thread(lost, self.lease, exc) from exc

    async def _call(self, message: dict[str, Any], timeout_s: float | None = None) -> AnyReply:
        try:
            return await super()._call(message, timeout_s)
        except TransportError as exc:
            raise await asyncio.to_thread(lost, self.lease, exc) from exc
