"""Small shared aliases and constants (importing this costs nothing)."""

from __future__ import annotations

#: WebSocket subprotocol a client offers to turn on the protocol extensions.
SUBPROTOCOL = "openenv.v1"
#: Version of the wire protocol in ``rfcs/0001-env-protocol.md``.
PROTOCOL_VERSION = "1.0"

RequestId = str | int
