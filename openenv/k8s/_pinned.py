"""``PinnedClient``: an ``EnvClient`` on one pool replica that turns a transport failure
into ``ReplicaLost`` when the replica is gone."""

from __future__ import annotations

from typing import Any, Self, TypeVar

from .._exceptions import ReplicaLost, TransportError
from .._protocol import AnyReply
from ..client import EnvClient
from ..containers import PoolLease
from ._remote import RemoteReplica

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


class PinnedClient(EnvClient[ActT, ObsT, StateT]):
    """An ``EnvClient`` on one pool replica: a transport failure while the replica does
    not answer ``/health`` becomes ``ReplicaLost``."""

    lease: PoolLease | None = None

    def connect(self) -> Self:
        try:
            return super().connect()
        except TransportError as exc:
            raise self._lost(exc) from exc

    def _call(self, message: dict[str, Any], timeout_s: float | None = None) -> AnyReply:
        try:
            return super()._call(message, timeout_s)
        except TransportError as exc:
            raise self._lost(exc) from exc

    def _lost(self, exc: TransportError) -> TransportError:
        return lost(self.lease, exc)


def lost(lease: PoolLease | None, exc: TransportError) -> TransportError:
    """``ReplicaLost`` for a transport failure on ``lease``'s replica if it no longer
    answers ``/health`` (asked afresh); else ``exc`` itself. Blocks for the check."""
    if lease is None or isinstance(exc, ReplicaLost):
        return exc
    if isinstance(lease.replica, RemoteReplica):
        lease.replica.suspect()
    if lease.replica.alive():
        return exc
    return ReplicaLost(
        f"replica {lease.base_url} is gone ({exc}); the pool routes new sessions to others", lease.base_url
    )
