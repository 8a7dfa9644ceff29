"""One exception tree for server, client and tools.

    OpenEnvError                      root: catch this to catch everything below
    ├── WireError                     an error with a wire code; raised by the server,
    │   │                             sent as {"type": "error"}, re-raised by the client
    │   ├── InvalidJSON               INVALID_JSON       frame is not JSON / msgpack
    │   ├── UnknownMessageType        UNKNOWN_TYPE       no such message "type"
    │   ├── ValidationFailed          VALIDATION_ERROR   message or action fails its model
    │   ├── ExecutionError            EXECUTION_ERROR    the env raised in reset/step/state
    │   ├── CapacityReached           CAPACITY_REACHED   no free session slot
    │   │   └── QuotaExceeded         QUOTA_EXCEEDED     this client holds its quota of sessions
    │   ├── FactoryError              FACTORY_ERROR      the env could not be constructed
    │   ├── SessionError              SESSION_ERROR      session-level failure
    │   │   ├── ResetRequired         RESET_REQUIRED     step/state before the first reset
    │   │   ├── SessionClosed         SESSION_CLOSED     use after close, idle reap or crash
    │   │   ├── SessionNotFound       SESSION_NOT_FOUND  unknown HTTP session id
    │   │   └── SessionBusy           SESSION_BUSY       the session is in another call
    │   ├── DeadlineExceeded          DEADLINE_EXCEEDED  the env call overran its deadline
    │   ├── TaskNotFound              TASK_NOT_FOUND     no such task id, index or split
    │   ├── FrameTooLarge             FRAME_TOO_LARGE    frame (or HTTP body) over the server's limit
    │   ├── Unauthorized              UNAUTHORIZED       no or wrong bearer token (--auth-token)
    │   └── Forbidden                 FORBIDDEN          a foreign Origin or Host (--allowed-origins)
    ├── TransportError                client side: the connection itself failed
    │   ├── ConnectError              could not connect or handshake
    │   ├── ConnectionClosed          the socket closed (carries the close code)
    │   ├── RequestTimeout            no reply within the timeout
    │   └── ReplicaLost               the pool replica serving this session is gone
    ├── BatchError                    a batch had failed items (carries every outcome)
    ├── ProviderError                 starting or stopping a container / process failed
    │   └── StartupFailed             it never became healthy (carries its last log lines)
    ├── SandboxError                  openenv.sandbox: bad config, or a process could not start
    │   └── SandboxUnavailable        the containment asked for cannot be had here (strict)
    ├── HubError                      openenv.hub: bad repo id, no token, the Hub refused
    ├── ServeFailed                   openenv serve: the server cannot start (its port is taken);
    │   │                             also a RuntimeError
    │   └── EnvKwargsError            --env-kwargs do not fit the env's constructor; also a ValueError
    ├── ManifestError                 openenv.yaml is missing or invalid; also a ValueError
    ├── CatalogError                  openenv.catalog: a catalog cannot be built, read or searched;
    │   │                             also a ValueError
    │   └── MetadataError             one env's committed metadata is unusable (carries ``code``)
    ├── InitError                     openenv init: unusable name or taken folder; also a ValueError
    ├── ProbeError                    openenv validate: the server did not answer as a probe expected
    ├── EnvNotFound                   openenv serve: the target names no env; also a LookupError
    ├── UnknownTool                   openenv.mcp: no tool of that name; also a LookupError
    ├── EvalError                     openenv eval: bad settings (k < 1, no such task), a run
    │   │                             folder of another run; also a ValueError
    │   └── PolicyError               openenv.policy: unknown policy spec, a model endpoint
    │                                 that cannot be reached or refuses the key
    ├── JudgeError                    openenv.rewards.LLMJudge: the judge model refused the key,
    │                                 retries ran out, a template names an unknown field
    └── MissingExtra                  an optional dependency is absent (names the extra to
                                      install); also an ImportError

The first seven codes are upstream OpenEnv's; the rest are our additions. Upstream
clients turn any error frame into a ``RuntimeError`` with the code in its text, so
new codes never break them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Error codes carried in ``{"type": "error", "data": {"code": ...}}``."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"
    RESET_REQUIRED = "RESET_REQUIRED"
    SESSION_CLOSED = "SESSION_CLOSED"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    FRAME_TOO_LARGE = "FRAME_TOO_LARGE"
    SESSION_BUSY = "SESSION_BUSY"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    TASK_NOT_FOUND = "TASK_NOT_FOUND"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"


class OpenEnvError(Exception):
    """Root of every error this package raises."""


def _wire_safe(value: Any) -> Any:
    """``value`` with every integer outside 64 bits as a string (JSON encoders refuse them)."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        return str(value)
    if isinstance(value, dict):
        return {k: _wire_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire_safe(v) for v in value]
    return value


#: Each wire code's class, filled as the classes below are defined.
WIRE_ERRORS: dict[ErrorCode, type[WireError]] = {}


class WireError(OpenEnvError):
    """An error that travels on the wire with a code, a message and extra fields.

    A subclass names its code and HTTP status in its class line,
    ``class X(WireError, code=ErrorCode.X, http_status=400)``, which also registers it in
    ``WIRE_ERRORS`` (one class a code). A subclass without a code (upstream's names, say)
    keeps its base's code and is not registered.
    """

    code: ErrorCode = ErrorCode.SESSION_ERROR
    http_status: int = 500

    def __init_subclass__(
        cls, code: ErrorCode | None = None, http_status: int | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        if code is None:
            return
        if code in WIRE_ERRORS or http_status is None:
            raise TypeError(f"{cls.__name__}: wire code {code} taken, or no http_status")
        cls.code, cls.http_status = code, http_status
        WIRE_ERRORS[code] = cls

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_wire(self) -> dict[str, Any]:
        """The ``data`` object of an error frame (details JSON can carry: an integer past
        64 bits, say a task index a client sent, is given as its decimal string)."""
        return {"message": self.message, "code": self.code.value, **_wire_safe(self.details)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code.value})"


class InvalidJSON(WireError, code=ErrorCode.INVALID_JSON, http_status=422):
    """The frame could not be decoded (422: as FastAPI answers a body that is not JSON, as upstream)."""


class UnknownMessageType(WireError, code=ErrorCode.UNKNOWN_TYPE, http_status=400):
    """The message ``type`` is not one the server knows."""


class ValidationFailed(WireError, code=ErrorCode.VALIDATION_ERROR, http_status=422):
    """A message or action failed validation; ``details["errors"]`` lists why."""


class ExecutionError(WireError, code=ErrorCode.EXECUTION_ERROR, http_status=500):
    """The environment raised while handling the request."""


class CapacityReached(WireError, code=ErrorCode.CAPACITY_REACHED, http_status=503):
    """Every session slot is taken."""


class QuotaExceeded(CapacityReached, code=ErrorCode.QUOTA_EXCEEDED, http_status=429):
    """This client (by peer address) already holds its quota of sessions
    (``max_sessions_per_client``); other clients still get theirs."""


class FactoryError(WireError, code=ErrorCode.FACTORY_ERROR, http_status=500):
    """The environment could not be constructed for a new session."""


class SessionError(WireError, code=ErrorCode.SESSION_ERROR, http_status=409):
    """A session-level failure."""


class ResetRequired(SessionError, code=ErrorCode.RESET_REQUIRED, http_status=409):
    """``step`` or ``state`` was called before the first ``reset``."""


class SessionClosed(SessionError, code=ErrorCode.SESSION_CLOSED, http_status=410):
    """The session was closed (by the client, the idle reaper or a crash)."""


class SessionNotFound(SessionError, code=ErrorCode.SESSION_NOT_FOUND, http_status=404):
    """No session has this id."""


class SessionBusy(SessionError, code=ErrorCode.SESSION_BUSY, http_status=409):
    """The session is still running another call; this request was not applied.

    ``details["applied"]`` is False: retrying later is safe.
    """


class DeadlineExceeded(WireError, code=ErrorCode.DEADLINE_EXCEEDED, http_status=504):
    """The env call overran its deadline.

    ``details``: ``timeout_s``; ``session_closed`` (True when the env could not be
    interrupted and its session was closed); ``applied``: ``"unknown"`` (the call was
    cut off part-way: the action may have been applied).
    """


class TaskNotFound(WireError, code=ErrorCode.TASK_NOT_FOUND, http_status=404):
    """No task has this id or index, or the task set has no such split.

    ``details``: ``split`` and, when given, ``task_id`` or ``index``.
    """


class FrameTooLarge(WireError, code=ErrorCode.FRAME_TOO_LARGE, http_status=413):
    """A frame, or an HTTP request body, exceeded the size limit."""


class Unauthorized(WireError, code=ErrorCode.UNAUTHORIZED, http_status=401):
    """The server wants a bearer token (``openenv serve --auth-token``) and the request
    had none or another one. Clients pass theirs as ``token=`` (or ``OPENENV_AUTH_TOKEN``)."""


class Forbidden(WireError, code=ErrorCode.FORBIDDEN, http_status=403):
    """A browser page of another origin, or a ``Host`` the server does not answer to (DNS
    rebinding), was refused (``--allowed-origins``, ``--allowed-hosts``)."""


class TransportError(OpenEnvError):
    """The connection to the server failed."""


class ConnectError(TransportError, ConnectionError):
    """The connection or the WebSocket handshake failed (also a builtin ``ConnectionError``,
    which is what upstream's clients raised there)."""


class ConnectionClosed(TransportError):
    """The connection closed; ``code`` and ``reason`` are the WebSocket close frame's."""

    def __init__(self, message: str, code: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


class RequestTimeout(TransportError):
    """No reply arrived within the timeout.

    ``details``: ``timeout_s`` (how long the client waited) and ``applied``
    (``"unknown"`` for a request the server may have run).
    """

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


class ReplicaLost(TransportError):
    """The pool replica this session was pinned to is gone (its ``/health`` fails); the
    pool's other sessions go on and new ones go to live replicas. ``url`` is the replica's."""

    def __init__(self, message: str, url: str = "") -> None:
        super().__init__(message)
        self.url = url


class BatchError(OpenEnvError):
    """Some items of a batch failed. ``results`` holds every item's outcome in order:
    a result, or the ``WireError`` of that item. The other items were applied."""

    def __init__(self, results: list[Any]) -> None:
        self.results = results
        self.errors = [r for r in results if isinstance(r, OpenEnvError)]
        first = self.errors[0] if self.errors else None
        super().__init__(
            f"{len(self.errors)} of {len(results)} batch items failed "
            f"(the others were applied); first: {type(first).__name__}: {first}"
        )


class ProviderError(OpenEnvError):
    """A provider could not start, reach or stop an env server."""


class StartupFailed(ProviderError):
    """An env server did not become healthy; ``logs`` holds its last output lines."""

    def __init__(self, message: str, logs: str = "") -> None:
        super().__init__(f"{message}\n--- last log lines ---\n{logs}" if logs else message)
        self.logs = logs


class SandboxError(OpenEnvError):
    """A sandbox could not be configured or could not start a process."""


class SandboxUnavailable(SandboxError):
    """The containment asked for (``strict``: bubblewrap) does not work on this machine."""


class HubError(OpenEnvError):
    """A Hugging Face Hub operation failed: bad repo id, no token, or the Hub refused."""


class ServeFailed(OpenEnvError, RuntimeError):
    """The server cannot start (e.g. its port is taken)."""


class EnvKwargsError(ServeFailed, ValueError):
    """The env's constructor arguments (``--env-kwargs``) do not fit it: one it does not
    take, a required one missing, or a value its ``env_kwargs_model`` refuses."""


class ManifestError(OpenEnvError, ValueError):
    """``openenv.yaml`` is missing or does not hold a valid manifest."""


class CatalogError(OpenEnvError, ValueError):
    """A catalog cannot be built, read, compared or searched without breaking its profile."""


class MetadataError(CatalogError):
    """One env's committed metadata is unusable; ``code`` is the catalog issue code
    (``missing_metadata``, ``invalid_metadata``, ``symlink_metadata``, ``metadata_limit``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class InitError(OpenEnvError, ValueError):
    """The name is not usable or the target folder is taken."""


class ProbeError(OpenEnvError):
    """The server did not answer as a probe expected (the message says how)."""


class EnvNotFound(OpenEnvError, LookupError):
    """The target names no environment."""


class UnknownTool(OpenEnvError, LookupError):
    """No tool of that name."""


class EvalError(OpenEnvError, ValueError):
    """``openenv eval`` cannot run as asked (k < 1, no such task, a folder of another run)."""


class PolicyError(EvalError):
    """A policy cannot be built or its model endpoint cannot be used (unknown spec,
    unreachable endpoint, a refused key)."""


class JudgeError(OpenEnvError):
    """An LLM judge cannot score: its model refused the key (401/403), answered a
    non-transient error, or kept failing past its retries; or its template is bad."""


class MissingExtra(OpenEnvError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        super().__init__(
            f"{feature} needs the '{extra}' extra (missing module {module!r}): "
            f"pip install 'openenv[{extra}]'"
        )
        self.feature = feature
        self.extra = extra
        self.module = module


def frame_too_large(limit: int | None = None) -> FrameTooLarge:
    """The error for a connection closed with 1009 (message too big)."""
    where = f"over the server's limit of {limit} bytes" if limit else "over the server's size limit"
    return FrameTooLarge(
        f"the server closed the connection (1009): a frame was {where}; "
        "raise OPENENV_MAX_FRAME_BYTES on the server or send less",
        limit=limit,
    )


#: Handshake response header in which our server states its frame limit (bytes).
MAX_FRAME_HEADER = "x-openenv-max-frame-bytes"


def connection_closed(
    code: int | None, reason: str = "", limit: int | None = None
) -> TransportError | FrameTooLarge:
    """The one mapping from a WebSocket close (code, reason) to a typed error.
    ``limit``: the server's frame limit, when its handshake stated it."""
    if code == 1009:
        return frame_too_large(limit)
    text = f"connection closed by the server (code {code}{': ' + reason if reason else ''})"
    if code is None:
        text = "connection lost (no close frame)"
    return ConnectionClosed(text, code, reason)


def error_from_wire(data: dict[str, Any]) -> WireError:
    """Rebuild the typed error from an error frame's ``data``.

    An unknown code (a newer server) becomes a plain ``WireError`` that keeps the code.
    """
    fields = dict(data)
    message = str(fields.pop("message", "server error"))
    raw_code = fields.pop("code", None)
    try:
        cls = WIRE_ERRORS[ErrorCode(raw_code)]
    except ValueError:
        err = WireError(message, **fields)
        err.details["code"] = raw_code
        return err
    return cls(message, **fields)
