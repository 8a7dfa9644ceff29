"""Small shared aliases and constants (importing this costs nothing beyond pydantic)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

#: WebSocket subprotocol a client offers to turn on the protocol extensions.
SUBPROTOCOL = "openenv.v1"
#: Version of the wire protocol in ``rfcs/0001-env-protocol.md``.
PROTOCOL_VERSION = "1.0"

RequestId = str | int


def json_integer(value: Any) -> Any:
    """Refuse what JSON Schema's ``integer`` refuses but pydantic's lax ``int`` takes."""
    if isinstance(value, bool | str | bytes):
        raise ValueError(f"Input should be a JSON integer, not {type(value).__name__}")
    return value  # then int: 13.0 is 13 (as JSON Schema says), 13.5 is refused


#: Makes an ``int`` a JSON integer, for wire models: ``13`` or ``13.0``, never ``true`` or
#: ``"13"`` (pydantic's lax ``int`` takes both). It goes after the constraints, so that
#: the JSON Schema still says ``minimum``: ``Annotated[int, Field(ge=1), JSON_INTEGER]``.
JSON_INTEGER = BeforeValidator(json_integer)
#: An unconstrained JSON integer (``JSON_INTEGER``). Booleans: pydantic's ``StrictBool``.
JsonInt = Annotated[int, JSON_INTEGER]
