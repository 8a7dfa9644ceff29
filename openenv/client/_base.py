"""Everything the sync and async clients share: all but the I/O.

Building request frames, matching replies by id, turning replies into typed results
and error frames into typed exceptions all live here, so ``EnvClient`` and
``AsyncEnvClient`` only send and receive. Every frame from the server is parsed once,
at the edge (``_decode``), into the tagged reply models the server's replies are
checked against (``openenv._protocol``: ``ObservationReply``, ``ErrorReply``, ...);
everything after works on those models.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import msgpack
import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from .._exceptions import (
    BatchError,
    OpenEnvError,
    RequestTimeout,
    SessionClosed,
    ValidationFailed,
    WireError,
    error_from_wire,
)
from .._models import GENERIC_MODELS, EnvModels, StepResult
from .._protocol import (
    AnyReply,
    BatchReply,
    ErrorReply,
    ObservationReply,
    StateReply,
    describe_errors,
    reply_adapter,
)
from .._types import SUBPROTOCOL
from ._batch import BatchItem, Close, Reset, Step
from ._transport import ConnectParams
from ._websocket import DEFAULT_TRANSPORT

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024
#: On extended connections the client sends its timeout as the call's deadline and waits
#: this much longer, so the server's DEADLINE_EXCEEDED (which may follow an interrupt and
#: its grace period) arrives before the client gives up.
REPLY_MARGIN_S = 3.0
_SIGNALS = ("reward", "done", "truncated")

ResetSpec = Mapping[str, Any]
"""One item of ``reset_batch``: ``seed``, ``episode_id`` and any reset options."""


def ws_url(base_url: str, path: str = "/ws") -> str:
    """``http(s)://host[:port][/prefix]`` or ``ws(s)://...`` -> the ``path`` endpoint
    (``""``: the URL itself); no scheme means ``ws://`` (as upstream 0.10)."""
    url = base_url.rstrip("/")
    if url.startswith("http://"):
        url = "ws://" + url[7:]
    elif url.startswith("https://"):
        url = "wss://" + url[8:]
    elif "://" not in url:
        url = "ws://" + url
    elif not url.startswith(("ws://", "wss://")):
        raise ValueError(f"base_url must start with http://, https://, ws:// or wss://: {base_url!r}")
    return url if url.endswith(path) else url + path


class BaseEnvClient(Generic[ActT, ObsT, StateT]):
    """Configuration, encoding and decoding shared by both clients."""

    #: Extra seconds to wait past a call's ``timeout_s`` on extended connections.
    reply_margin_s: float = REPLY_MARGIN_S

    def __init__(
        self,
        base_url: str,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        headers: Mapping[str, str] | None = None,
        token: str | None = None,
        binary: bool = False,
        extensions: bool = True,
        transport: Any = None,
    ) -> None:
        """Args:
        base_url: the server, ``http://host:8000`` (``/ws`` is appended).
        models: the env's models (``EnvModels``); the default gives dicts.
        timeout_s: seconds each call may take. On a server with our extensions it is
            sent as the call's deadline: the server stops the call then and answers
            ``DeadlineExceeded``; the client waits ``REPLY_MARGIN_S`` longer for that.
        connect_timeout_s: seconds to wait for the connection and handshake.
        max_frame_bytes: largest frame accepted from the server.
        headers: extra handshake headers.
        token: the server's bearer token (``openenv serve --auth-token``), sent once, in
            the handshake; default ``OPENENV_AUTH_TOKEN`` when set. A missing or wrong
            one raises ``Unauthorized`` on connect.
        binary: send msgpack binary frames (needs a server with our extensions).
        extensions: offer the ``openenv.v1`` subprotocol (ids, sessions, batch).
        transport: how to connect (``openenv.client.ASGITransport(app)`` runs a server
            app in-process); default: real WebSockets.
        """
        self.base_url = base_url
        self.url = ws_url(base_url)
        self.models = models
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_frame_bytes = max_frame_bytes
        self.headers = dict(headers or {})
        token = os.environ.get("OPENENV_AUTH_TOKEN") if token is None else token
        if token and not any(name.lower() == "authorization" for name in self.headers):
            self.headers["Authorization"] = f"Bearer {token}"
        self.binary = binary
        self.subprotocols = [SUBPROTOCOL] if extensions else []
        self.transport = transport if transport is not None else DEFAULT_TRANSPORT
        #: True once connected to a server that accepted the ``openenv.v1`` subprotocol.
        self.extended = False
        self._closed = False
        self._next_id = 0
        obs = models.observation
        self._obs_model: type[BaseModel] | None = obs if _is_model(obs) else None  # type: ignore[assignment]
        self._obs_signals = tuple(
            k for k in _SIGNALS if self._obs_model and k in self._obs_model.model_fields
        )
        self._on_close: list[Callable[[], None]] = []
        self._replies: TypeAdapter[Any] = reply_adapter()
        self._state_model: type[BaseModel] | None = (
            models.state if _is_model(models.state) else None  # type: ignore[assignment]
        )

    def on_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the client closes (stop a container, return a lease)."""
        self._on_close.append(callback)

    def _run_close_callbacks(self) -> None:
        callbacks, self._on_close = self._on_close, []
        for callback in reversed(callbacks):
            callback()

    # --- connection state (no I/O) ------------------------------------------------

    def _connect_params(self) -> ConnectParams:
        if self._closed:
            raise SessionClosed("this client was closed; create a new one")
        return ConnectParams(
            self.url, self.subprotocols, self.headers, self.max_frame_bytes, self.connect_timeout_s
        )

    def _connected(self, subprotocol: str | None) -> None:
        self.extended = subprotocol is not None

    # --- frames -------------------------------------------------------------------

    def _frame(self, message: dict[str, Any]) -> tuple[str | bytes, int | None]:
        """Encode a request, adding an id on extended connections."""
        rid: int | None = None
        if self.extended:
            self._next_id += 1
            rid = message["id"] = self._next_id
        if self.binary:
            return msgpack.packb(message, use_bin_type=True), rid
        return orjson.dumps(message).decode(), rid

    def _prepare(
        self, message: dict[str, Any], timeout_s: float | None
    ) -> tuple[str | bytes, int | None, float]:
        """``(frame, request id, seconds to wait)``. On extended connections the call's
        timeout travels as its server-side deadline."""
        timeout = self.timeout_s if timeout_s is None else timeout_s
        if self.extended:
            message["timeout_s"] = timeout
            frame, rid = self._frame(message)
            return frame, rid, timeout + self.reply_margin_s
        frame, rid = self._frame(message)
        return frame, rid, timeout

    def _timeout_error(self, message: dict[str, Any], waited: float) -> RequestTimeout:
        what = message.get("type", "request")
        if self.extended:
            tail = (
                "the server did not answer, not even with DEADLINE_EXCEEDED; the request may "
                "have been applied. A new call on that session is refused (SESSION_BUSY) "
                "while the old one still runs."
            )
        else:
            tail = (
                "the request may have been applied. The connection was dropped so that a late "
                "reply is never read as the answer to the next request."
            )
        return RequestTimeout(
            f"no reply to {what} within {waited:g} s: {tail}", timeout_s=waited, applied="unknown"
        )

    def _decode(self, raw: str | bytes) -> AnyReply:
        """One server frame, parsed into its reply model (JSON, or msgpack on binary
        clients); ``OpenEnvError`` for a frame that is not a server message."""
        try:
            if isinstance(raw, bytes) and self.binary:
                try:
                    obj = msgpack.unpackb(raw, raw=False)
                except Exception as exc:
                    raise OpenEnvError(f"server sent an undecodable frame: {exc}") from None
                return self._replies.validate_python(obj)  # type: ignore[no-any-return]
            return self._replies.validate_json(raw)  # type: ignore[no-any-return]
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_context=False, include_input=False)
            if errors and errors[0]["type"] == "json_invalid":
                raise OpenEnvError(f"server sent an undecodable frame: {errors[0]['msg']}") from None
            safe = [{"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]} for e in errors]
            raise OpenEnvError(
                f"server sent a frame that is not a message ({describe_errors(safe)}): {str(raw)[:200]}"
            ) from None

    @staticmethod
    def _is_reply_to(msg: AnyReply, rid: int | None) -> bool:
        """False for a late reply to a request we already gave up on."""
        return rid is None or msg.id == rid

    def _action_payload(self, action: Any) -> Any:
        if isinstance(action, BaseModel):
            return action.model_dump(mode="python" if self.binary else "json", exclude_unset=True)
        if isinstance(action, Mapping):
            return dict(action)
        raise TypeError(f"action must be a pydantic model or a mapping, not {type(action).__name__}")

    def _reset_message(
        self, seed: int | None, episode_id: str | None, options: dict[str, Any], session: str | None
    ) -> dict[str, Any]:
        data = dict(options)
        if seed is not None:
            data["seed"] = seed
        if episode_id is not None:
            data["episode_id"] = episode_id
        return self._with_session({"type": "reset", "data": data}, session)

    def _step_message(self, action: Any, session: str | None) -> dict[str, Any]:
        return self._with_session({"type": "step", "data": self._action_payload(action)}, session)

    def _with_session(self, message: dict[str, Any], session: str | None) -> dict[str, Any]:
        if session is not None:
            if not self.extended:
                raise OpenEnvError("named sessions need a server that speaks the openenv.v1 extensions")
            message["session"] = session
        return message

    def _batch_message(self, messages: Iterable[dict[str, Any]]) -> dict[str, Any]:
        if not self.extended:
            raise OpenEnvError("batch needs a server that speaks the openenv.v1 extensions")
        return {"type": "batch", "messages": list(messages)}

    # --- replies ------------------------------------------------------------------

    @staticmethod
    def _raise_if_error(msg: AnyReply) -> None:
        if isinstance(msg, ErrorReply):
            raise error_from_wire(msg.data.model_dump())

    @staticmethod
    def _unexpected(msg: AnyReply, expected: str) -> OpenEnvError:
        return OpenEnvError(f"expected {expected} reply, got {msg.type!r}")

    def _result(self, msg: AnyReply) -> StepResult[ObsT]:
        if not isinstance(msg, ObservationReply):
            self._raise_if_error(msg)
            raise self._unexpected(msg, "an observation")
        data = msg.data
        body = data.observation
        done, truncated, reward = data.done, data.truncated, data.reward
        metadata = data.metadata or body.get("metadata") or {}
        observation: Any = body
        if self._obs_model is not None:
            values = {"reward": reward, "done": done, "truncated": truncated}
            for key in self._obs_signals:
                body[key] = values[key]
            try:
                observation = self._obs_model.model_validate(body)
            except Exception as exc:
                raise ValidationFailed(
                    f"observation does not match {self._obs_model.__name__}: {exc}"
                ) from None
        return StepResult(observation, reward, done and not truncated, truncated, metadata)

    def _state(self, msg: AnyReply) -> StateT:
        if not isinstance(msg, StateReply):
            self._raise_if_error(msg)
            raise self._unexpected(msg, "a state")
        if self._state_model is not None:
            return self._state_model.model_validate(msg.data)  # type: ignore[return-value]
        return msg.data  # type: ignore[return-value]

    def _batch_results(self, msg: AnyReply, kind: str | list[str], return_exceptions: bool) -> list[Any]:
        """Every item's outcome in order: a result or its error. Without
        ``return_exceptions`` a failed item raises ``BatchError`` carrying them all.
        ``kind`` is the reply kind of every item, or one per item."""
        if not isinstance(msg, BatchReply):
            self._raise_if_error(msg)
            raise self._unexpected(msg, "a batch")
        parsers = {"observation": self._result, "state": self._state, "closed": self._closed_item}
        kinds = [kind] * len(msg.data) if isinstance(kind, str) else kind
        out: list[Any] = []
        failed = False
        for item, item_kind in zip(msg.data, kinds, strict=True):
            try:
                out.append(parsers[item_kind](item))
            except WireError as err:
                failed = True
                out.append(err)
        if failed and not return_exceptions:
            raise BatchError(out)
        return out

    def _closed_item(self, msg: AnyReply) -> None:
        self._raise_if_error(msg)

    # --- batch frames -------------------------------------------------------------

    def _reset_batch_messages(
        self,
        sessions: Iterable[str] | Mapping[str, ResetSpec],
        seed: int | None,
        options: dict[str, Any],
    ) -> list[dict[str, Any]]:
        """One reset per session. A mapping gives each item its own ``seed``,
        ``episode_id``, ``timeout_s`` and options (over the shared ``options``); a plain
        list with ``seed`` gives item ``i`` the seed ``seed + i``."""
        msgs = []
        if isinstance(sessions, Mapping):
            for key, spec in sessions.items():
                item = {**options, **spec}
                item_seed = item.pop("seed", seed)
                episode_id = item.pop("episode_id", None)
                item_timeout = item.pop("timeout_s", None)
                msg = self._reset_message(item_seed, episode_id, item, key)
                if item_timeout is not None:
                    msg["timeout_s"] = item_timeout
                msgs.append(msg)
        else:
            for i, key in enumerate(sessions):
                msgs.append(self._reset_message(None if seed is None else seed + i, None, options, key))
        return msgs

    def _item_messages(self, items: Iterable[BatchItem]) -> tuple[list[dict[str, Any]], list[str]]:
        """The messages of a mixed batch and the reply kind of each item."""
        msgs: list[dict[str, Any]] = []
        kinds: list[str] = []
        for item in items:
            if isinstance(item, Reset):
                msg = self._reset_message(item.seed, item.episode_id, item.options, item.session)
                kind = "observation"
            elif isinstance(item, Step):
                msg = self._step_message(item.action, item.session)
                kind = "observation"
            elif isinstance(item, Close):
                msg, kind = self._with_session({"type": "close"}, item.session), "closed"
            else:
                msg, kind = self._with_session({"type": "state"}, item.session), "state"
            timeout = getattr(item, "timeout_s", None)
            if timeout is not None:
                msg["timeout_s"] = timeout
            msgs.append(msg)
            kinds.append(kind)
        return msgs, kinds

    def _keyed_messages(self, kind: str, sessions: Iterable[str]) -> list[dict[str, Any]]:
        return [self._with_session({"type": kind}, key) for key in sessions]


def _is_model(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, BaseModel)
