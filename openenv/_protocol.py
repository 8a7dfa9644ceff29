"""The wire protocol: every message as a pydantic model tagged by a ``Literal`` type.

Upstream OpenEnv 0.10's ``/ws`` messages are kept field for field. Our additions are
all optional, so an upstream peer never sends or sees them:

* ``id`` on any request, echoed on its reply, so a late reply after a client timeout
  is recognised and dropped instead of being read as the answer to the next request;
* ``session`` on any request, to run several sessions over one connection;
* ``batch``, several requests in one frame, answered by one ``batch`` frame;
* msgpack binary frames (a binary frame in, a binary frame back);
* ``truncated`` on observation replies.

A server sends the additions only on a connection whose client asked for them with
the ``openenv.v1`` WebSocket subprotocol (``openenv._types.SUBPROTOCOL``).

``rfcs/0001-env-protocol.md`` is the prose form of this module.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar

import msgpack
import orjson
from pydantic import BaseModel, ConfigDict, Field, Strict, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from ._exceptions import InvalidJSON, UnknownMessageType, ValidationFailed, WireError
from ._models import Observation
from ._types import JSON_INTEGER, RequestId

ActT = TypeVar("ActT")


#: A seed: an integer as JSON Schema means it (``13`` or ``13.0``, never ``true`` or
#: ``"13"``), at least 0 (the constraint first, so the schema says ``minimum``).
JsonSeed = Annotated[int, Field(ge=0), JSON_INTEGER]
#: An integer that is a JSON integer, not ``true`` (``13.0`` is refused too: for request ids).
StrictInt = Annotated[int, Strict()]
#: A number as JSON Schema means it: ``1`` or ``1.5``, never ``true`` or ``"1"``.
JsonNumber = Annotated[float, Strict()]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | StrictInt | None = None  # checked in the core, per frame: no Python validator
    session: str | None = Field(default=None, max_length=128)
    #: The call's deadline in seconds (extension); the server's default otherwise. At
    #: least 1 ms: a deadline below any clock's resolution is refused (VALIDATION_ERROR).
    timeout_s: Annotated[JsonNumber, Field(ge=0.001, le=86400)] | None = None


class ResetData(BaseModel):
    """``reset``'s ``data``: ``seed``, ``episode_id``; any other key goes to ``options``.
    JSON types as the schema says: ``{"seed": false}`` is refused."""

    model_config = ConfigDict(extra="allow")

    seed: JsonSeed | None = None
    episode_id: str | None = Field(default=None, max_length=255)


class ResetMessage(_Request):
    type: Literal["reset"]
    data: ResetData = Field(default_factory=ResetData)


class StepMessage(_Request, Generic[ActT]):
    """``data`` is the action itself, not wrapped (as upstream)."""

    type: Literal["step"]
    data: ActT


class StateMessage(_Request):
    type: Literal["state"]


class CloseMessage(_Request):
    """Ends the session. Upstream sends no reply; with an ``id`` we reply ``closed``."""

    type: Literal["close"]


class McpMessage(_Request):
    """A JSON-RPC request routed to the session's MCP handler."""

    type: Literal["mcp"]
    data: dict[str, Any]


class BatchMessage(_Request, Generic[ActT]):
    """Several requests, each for its own ``session``, answered in one ``batch`` frame."""

    type: Literal["batch"]
    messages: list[
        Annotated[
            ResetMessage | StepMessage[ActT] | StateMessage | CloseMessage,
            Field(discriminator="type"),
        ]
    ] = Field(max_length=4096)


# --- replies (server -> client) -------------------------------------------------


class _Reply(BaseModel):
    id: RequestId | None = None
    session: str | None = None


class ObservationData(BaseModel):
    observation: dict[str, Any]
    reward: bool | int | float | None = None
    done: bool = False
    truncated: bool = False
    metadata: dict[str, Any] | None = None


class ObservationReply(_Reply):
    type: Literal["observation"]
    data: ObservationData


class StateReply(_Reply):
    type: Literal["state"]
    data: dict[str, Any]


class ErrorData(BaseModel):
    model_config = ConfigDict(extra="allow")

    message: str
    code: str


class ErrorReply(_Reply):
    type: Literal["error"]
    data: ErrorData


class ClosedReply(_Reply):
    type: Literal["closed"]


class McpReply(_Reply):
    type: Literal["mcp"]
    data: dict[str, Any]


class BatchReply(_Reply):
    type: Literal["batch"]
    data: list[
        Annotated[ObservationReply | StateReply | ErrorReply | ClosedReply, Field(discriminator="type")]
    ]


ServerMessage = Annotated[
    ObservationReply | StateReply | ErrorReply | ClosedReply | McpReply | BatchReply,
    Field(discriminator="type"),
]


AnyReply = ObservationReply | StateReply | ErrorReply | ClosedReply | McpReply | BatchReply


def reply_adapter() -> TypeAdapter[Any]:
    """The parser of every server message (``ServerMessage``), built on first use: the
    clients parse each reply with it, once, at the edge; validators and tests check
    replies with it (as ``SERVER_MESSAGE``). The server never needs it."""
    adapter: TypeAdapter[Any] | None = globals().get("SERVER_MESSAGE")
    if adapter is None:
        adapter = TypeAdapter(ServerMessage)
        globals()["SERVER_MESSAGE"] = adapter
    return adapter


def __getattr__(name: str) -> Any:
    if name == "SERVER_MESSAGE":
        return reply_adapter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


AnyRequest = ResetMessage | StepMessage[Any] | StateMessage | CloseMessage | McpMessage | BatchMessage[Any]


def request_adapter(action_model: type[Any]) -> TypeAdapter[Any]:
    """The parser for one env's client messages, built once per app.

    ``step`` messages are typed by the env's action model, so a frame is decoded and
    its action validated in one pass.
    """
    union = Annotated[
        ResetMessage
        | StepMessage[action_model]  # type: ignore[valid-type]
        | StateMessage
        | CloseMessage
        | McpMessage
        | BatchMessage[action_model],  # type: ignore[valid-type]
        Field(discriminator="type"),
    ]
    return TypeAdapter(union)


# --- codec ----------------------------------------------------------------------

#: The most values (JSON values, msgpack items) one frame may hold: what decoding it
#: may cost the event loop is bounded by this, not by the frame's size (a 16 MiB frame
#: of small values would take seconds to validate, only to be refused).
MAX_VALUES = 32768
#: Frames up to this size go straight to the parser: too small to hold more values than
#: ``MAX_VALUES`` (a JSON value after the first of a container costs a comma and a
#: digit at least; a msgpack item a byte), so the hot path does no counting.
SCAN_FROM = 2 * MAX_VALUES


def decode_request(adapter: TypeAdapter[Any], frame: str | bytes, binary: bool) -> AnyRequest:
    """Decode and validate one client frame; raise a ``WireError`` with a wire code."""
    try:
        if binary:
            try:
                obj = msgpack.unpackb(frame, raw=False) if len(frame) <= SCAN_FROM else _unpack_counted(frame)
            except _TooManyValues:
                raise _too_many_values() from None
            except ValueError as exc:  # msgpack's "N exceeds max_array_len(M)" too
                if "exceeds max_" in str(exc):
                    raise _too_many_values() from None
                raise InvalidJSON(f"Invalid msgpack frame: {exc}") from None
            except Exception as exc:
                raise InvalidJSON(f"Invalid msgpack frame: {exc}") from None
            return adapter.validate_python(obj)  # type: ignore[no-any-return]
        if len(frame) > SCAN_FROM and too_many_json_values(frame):
            raise _too_many_values()
        return adapter.validate_json(frame)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise classify_validation_error(exc) from None


def too_many_json_values(text: str | bytes) -> bool:
    """Whether a JSON text holds more than ``MAX_VALUES`` values, found by passes of C
    (``count``, ``find``) instead of a parse: each value after the first of a container
    follows a comma, and the commas that count are those outside strings. Over
    ``4 * MAX_VALUES`` quotes is too many whatever they are (strings, or escaped quotes
    inside them)."""
    t: Any = text
    comma, quote, backslash = (",", '"', "\\") if isinstance(t, str) else (b",", b'"', b"\\")
    if t.count(quote) > 4 * MAX_VALUES:
        return True
    commas = t.count(comma)
    if commas <= MAX_VALUES:
        return False
    return bool(commas - _commas_in_strings(t, comma, quote, backslash) > MAX_VALUES)


def _commas_in_strings(t: Any, comma: Any, quote: Any, backslash: Any) -> int:
    """The commas inside strings: one step per quote (at most ``4 * MAX_VALUES``), the
    counting in C without copying (a slice only to read a run of backslashes)."""
    inside, pos, find, count = 0, 0, t.find, t.count
    while (start := find(quote, pos)) >= 0:
        end = find(quote, start + 1)
        last = start
        while end > 0 and t[end - 1 : end] == backslash:
            body = t[last + 1 : end]  # no quote in it: the run of backslashes is all here
            if (len(body) - len(body.rstrip(backslash))) % 2 == 0:
                break  # the backslashes escape each other, not the quote
            last, end = end, find(quote, end + 1)
        if end < 0:
            break  # an unterminated string: the parser refuses it
        inside += count(comma, start + 1, end)
        pos = end + 1
    return int(inside)


class _TooManyValues(Exception):
    pass


def _unpack_counted(frame: str | bytes) -> Any:
    """``msgpack.unpackb`` for a large frame: no collection over ``MAX_VALUES`` items,
    and the items of all of them together counted as each one ends; more than
    ``MAX_VALUES`` in all stops the unpacking there."""
    seen = 0

    def tally(obj: Any) -> Any:
        nonlocal seen
        seen += len(obj)
        if seen > MAX_VALUES:
            raise _TooManyValues
        return obj

    return msgpack.unpackb(
        frame, raw=False, max_array_len=MAX_VALUES, max_map_len=MAX_VALUES, list_hook=tally, object_hook=tally
    )


def _too_many_values() -> ValidationFailed:
    return ValidationFailed(
        f"Invalid message: more than {MAX_VALUES} values in one frame (a batch holds at most "
        "4096 requests): send fewer or smaller ones",
        max_values=MAX_VALUES,
    )


def classify_validation_error(exc: ValidationError) -> WireError:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    first = errors[0] if errors else {"type": "", "msg": str(exc)}
    kind = first["type"]
    if kind == "json_invalid":
        return InvalidJSON(first["msg"])  # pydantic's text already starts "Invalid JSON: "
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return UnknownMessageType(f"Unknown or missing message type: {first['msg']}")
    safe = _json_safe(errors)
    what = "action" if errors and errors[0]["loc"][:2] == ("step", "data") else "message"
    return ValidationFailed(f"Invalid {what}: {describe_errors(safe)}", errors=safe)


def validation_failed(exc: ValidationError, what: str) -> ValidationFailed:
    """A ``ValidationFailed`` for one model (``what``: "reset options", ...), naming fields."""
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    safe = [{"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]} for e in errors]
    return ValidationFailed(f"Invalid {what}: {describe_errors(safe)}", errors=safe)


def describe_errors(errors: list[dict[str, Any]], limit: int = 3) -> str:
    """``"message: Field required; extra_key: unknown field"`` for the first few errors."""
    parts = []
    for e in errors[:limit]:
        where = ".".join(str(p) for p in e["loc"]) or "(root)"
        msg = "unknown field (not in the model)" if e["type"] == "extra_forbidden" else e["msg"]
        parts.append(f"{where}: {msg}")
    more = len(errors) - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _json_safe(errors: list[Any]) -> list[dict[str, Any]]:
    return [{"type": e["type"], "loc": _relative_loc(e["loc"]), "msg": e["msg"]} for e in errors]


def _relative_loc(loc: tuple[Any, ...]) -> list[Any]:
    """Drop the union tag, and for a step's action also ``data``: upstream reports
    action errors relative to the action (``["message"]``)."""
    parts = list(loc)
    if parts and parts[0] in _TAGS:
        parts = parts[1:]
        if loc[0] == "step" and parts[:1] == ["data"] and len(parts) > 1:
            parts = parts[1:]
    return parts


_TAGS = frozenset({"reset", "step", "state", "close", "mcp", "batch"})


def salvage_request_id(frame: str | bytes, binary: bool) -> tuple[RequestId | None, str | None]:
    """Best-effort ``(id, session)`` of a frame that failed validation (error path only;
    not for one refused for ``MAX_VALUES``: parsing it is what was refused)."""
    try:
        obj = msgpack.unpackb(frame, raw=False) if binary else orjson.loads(frame)
    except Exception:
        return None, None
    if not isinstance(obj, dict):
        return None, None
    rid, session = obj.get("id"), obj.get("session")
    return (
        rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None,
        session if isinstance(session, str) else None,
    )


def encode(message: dict[str, Any], binary: bool) -> str | bytes:
    """Encode a reply dict: compact JSON text, or msgpack bytes."""
    if binary:
        return msgpack.packb(message, use_bin_type=True, default=to_jsonable_python)  # type: ignore[no-any-return]
    return orjson.dumps(message, default=to_jsonable_python).decode()


_REPLY_EXCLUDE = {"reward", "done", "truncated"}


def observation_data(obs: Observation, binary: bool, extended: bool) -> dict[str, Any]:
    """The ``data`` of an observation reply.

    As upstream: ``observation`` holds the model without ``reward``/``done``, and
    ``metadata`` is repeated at the top level only when non-empty. ``truncated`` is
    added on extended connections only.
    """
    body = obs.model_dump(mode="python" if binary else "json", exclude=_REPLY_EXCLUDE)
    data: dict[str, Any] = {"observation": body, "reward": obs.reward, "done": obs.done}
    if obs.metadata:
        data["metadata"] = body["metadata"]
    if extended:
        data["truncated"] = obs.truncated
    return data


def error_message(err: WireError, rid: RequestId | None, session: str | None) -> dict[str, Any]:
    msg: dict[str, Any] = {"type": "error", "data": err.to_wire()}
    if rid is not None:
        msg["id"] = rid
    if session is not None:
        msg["session"] = session
    return msg
