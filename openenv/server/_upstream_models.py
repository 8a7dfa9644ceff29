"""Upstream OpenEnv's server-side models (``openenv.core.env_server.types``, ``.exceptions``
and the tool half of ``.mcp_types``), over ours.

``Action``, ``Observation``, ``State`` and ``EnvironmentMetadata`` are subclasses of
ours (``openenv.Action`` ...), so what an upstream env returns is one of our models and
our server serves it as it is. They add upstream's model config: assignments are
validated and arbitrary field types (numpy arrays) are allowed. Two differences from
upstream's classes: ``Observation`` also has our ``truncated`` field (default False,
so the episode "terminated" when ``done``), and its schema lists it.

The request/response models are upstream's, field for field: data only, for code that
builds or checks messages. The WebSocket message models (``WS*``) are our wire models
(``openenv._protocol``) with upstream's defaults: they accept our extensions and dump
upstream's frames. The exceptions keep upstream's constructors and attributes and
subclass the error of ours that means the same, so ``except openenv.CapacityReached``
catches upstream's ``SessionCapacityError`` and our server sends it with the same
wire code. ``ListToolsAction`` / ``CallToolAction`` are the actions an upstream
``MCPEnvironment`` answers through ``step`` (data only: the tools are the MCP part's).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from .. import _protocol as _proto
from .._exceptions import (
    CapacityReached,
    ErrorCode,
    FactoryError,
    OpenEnvError,
    SessionError,
    SessionNotFound,
)
from .._models import Action as _Action
from .._models import EnvironmentMetadata as _EnvironmentMetadata
from .._models import Observation as _Observation
from .._models import State as _State
from .._types import RequestId

Scalar = int | float | bool

_UPSTREAM = ConfigDict(validate_assignment=True, arbitrary_types_allowed=True)


class _StrEnum(str, Enum):  # noqa: UP042 - upstream's str(), not StrEnum's
    """Upstream's enums: ``str`` values whose ``str()`` is ``Class.NAME``, as upstream's."""


class ServerMode(_StrEnum):
    """``simulation`` serves ``/reset``, ``/step`` and ``/state``; ``production`` does not."""

    SIMULATION = "simulation"
    PRODUCTION = "production"


class HealthStatus(_StrEnum):
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    DEGRADED = "degraded"


#: Upstream's seven wire codes, named and valued as the first seven of ours (``openenv.ErrorCode``
#: adds more).
WSErrorCode = Enum(  # type: ignore[misc]  # members from ours, so not a literal
    "WSErrorCode", [(code.name, code.value) for code in list(ErrorCode)[:7]], type=str, module=__name__
)


class Action(_Action):
    """Base of an upstream-style env's actions: ``openenv.Action`` with upstream's config."""

    model_config = _UPSTREAM


class Observation(_Observation):
    """Base of an upstream-style env's observations: ``openenv.Observation`` (so with
    ``truncated``) with upstream's config."""

    model_config = _UPSTREAM


class State(_State):
    """Base of an upstream-style env's state: ``openenv.State`` with upstream's config."""

    model_config = _UPSTREAM


class BaseMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EnvironmentMetadata(_EnvironmentMetadata):
    """What ``GET /metadata`` returns; unknown fields are refused, as upstream."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ResetRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    seed: int | None = Field(default=None, ge=0)
    episode_id: str | None = Field(default=None, max_length=255)


class ResetResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    observation: dict[str, Any]
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] | None = None


class StepRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    action: dict[str, Any]
    timeout_s: float | None = Field(default=None, gt=0)
    request_id: str | None = Field(default=None, max_length=255)


class StepResponse(ResetResponse):
    pass


class CodeExecResult(BaseMessage):
    stdout: str
    stderr: str
    exit_code: int


class SchemaResponse(BaseMessage):
    """``GET /schema``; ``reset_observation`` is left out of the dump when None."""

    action: dict[str, Any]
    observation: dict[str, Any]
    state: dict[str, Any]
    reset_observation: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _drop_absent_reset_schema(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.reset_observation is None:
            data.pop("reset_observation", None)
        return data


class HealthResponse(BaseMessage):
    status: HealthStatus = HealthStatus.HEALTHY


class ListTasksRequest(BaseMessage):
    split: str


class NumTasksRequest(BaseMessage):
    split: str


class GetTaskRequest(BaseMessage):
    split: str
    index: int


class GetTaskRangeRequest(BaseMessage):
    split: str
    start: int | None = None
    stop: int | None = None


class _UpstreamFrame(BaseModel):
    """Our extensions (``id``, ``session``, ``timeout_s``) are accepted and left out of
    the dump, so these models produce upstream's frames exactly."""

    id: RequestId | None = Field(default=None, exclude=True)
    session: str | None = Field(default=None, exclude=True)
    timeout_s: float | None = Field(default=None, exclude=True)


class WSResetMessage(_UpstreamFrame, _proto.ResetMessage):
    type: Literal["reset"] = "reset"
    data: dict[str, Any] = Field(default_factory=dict)  # type: ignore[assignment]  # upstream's open dict


class WSStepMessage(_UpstreamFrame, _proto.StepMessage[dict[str, Any]]):
    type: Literal["step"] = "step"


class WSStateMessage(_UpstreamFrame, _proto.StateMessage):
    type: Literal["state"] = "state"


class WSCloseMessage(_UpstreamFrame, _proto.CloseMessage):
    type: Literal["close"] = "close"


WSIncomingMessage = Annotated[
    WSResetMessage | WSStepMessage | WSStateMessage | WSCloseMessage,
    Field(discriminator="type"),
]


class WSObservationResponse(_UpstreamFrame, _proto.ObservationReply):
    type: Literal["observation"] = "observation"
    data: dict[str, Any]  # type: ignore[assignment]  # upstream's open dict


class WSStateResponse(_UpstreamFrame, _proto.StateReply):
    type: Literal["state"] = "state"


class WSErrorResponse(_UpstreamFrame, _proto.ErrorReply):
    type: Literal["error"] = "error"
    data: dict[str, Any]  # type: ignore[assignment]  # upstream's open dict


class ConcurrencyConfig(BaseMessage):
    """``max_concurrent_envs`` becomes our session limit, ``session_timeout`` our idle
    timeout (None: the server's, 600 s unless ``OPENENV_IDLE_TIMEOUT_S`` says otherwise)."""

    max_concurrent_envs: int = Field(default=1, ge=1)
    session_timeout: float | None = Field(default=None, gt=0)


class ServerCapacityStatus(BaseMessage):
    active_sessions: int = Field(ge=0)
    max_sessions: int = Field(ge=1)

    @model_validator(mode="after")
    def _within_bounds(self) -> ServerCapacityStatus:
        if self.active_sessions > self.max_sessions:
            raise ValueError(
                f"active_sessions ({self.active_sessions}) cannot exceed max_sessions ({self.max_sessions})"
            )
        return self

    @property
    def available_slots(self) -> int:
        return self.max_sessions - self.active_sessions

    @property
    def is_at_capacity(self) -> bool:
        return self.available_slots == 0

    @classmethod
    def from_counts(cls, active: int, max_sessions: int) -> ServerCapacityStatus:
        return cls(active_sessions=active, max_sessions=max_sessions)


class SessionInfo(BaseMessage):
    session_id: str
    created_at: float
    last_activity_at: float
    step_count: int = Field(default=0, ge=0)
    environment_type: str


class McpMethod(_StrEnum):
    TOOLS_LIST = "tools/list"
    TOOLS_CALL = "tools/call"


class ToolErrorType(_StrEnum):
    EXECUTION_ERROR = "execution_error"
    INVALID_ARGS = "invalid_args"
    TRANSPORT_ERROR = "transport_error"
    TOOL_NOT_FOUND = "tool_not_found"
    TIMEOUT = "timeout"


class ToolError(BaseModel):
    """A failure around a tool call (the tool's own errors are in its result)."""

    model_config = ConfigDict(extra="forbid")

    error_type: ToolErrorType
    message: str


class ListToolsAction(Action):
    """Ask for the env's tools; needs no reset first."""

    type: Literal["list_tools"] = "list_tools"


class CallToolAction(Action):
    type: Literal["call_tool"] = "call_tool"
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class CallToolObservation(Observation):
    """A tool's result (its own errors included), or ``error`` when the call failed."""

    tool_name: str
    result: Any = None
    error: ToolError | None = None


class WSMCPMessage(_UpstreamFrame, _proto.McpMessage):
    type: Literal["mcp"] = "mcp"


class WSMCPResponse(_UpstreamFrame, _proto.McpReply):
    type: Literal["mcp"] = "mcp"


# --- upstream's exceptions, in our tree ---


class ConcurrencyConfigurationError(OpenEnvError, ValueError):
    """More than one concurrent session asked of an env that does not declare
    ``SUPPORTS_CONCURRENT_SESSIONS = True``."""

    def __init__(self, environment_name: str, max_concurrent_envs: int, message: str | None = None) -> None:
        self.environment_name = environment_name
        self.max_concurrent_envs = max_concurrent_envs
        super().__init__(
            message
            or (
                f"Environment '{environment_name}' is not marked as SUPPORTS_CONCURRENT_SESSIONS. "
                f"Cannot run with max_concurrent_envs={max_concurrent_envs}. Either set "
                "max_concurrent_envs=1 or ensure the environment properly isolates session state "
                "and set SUPPORTS_CONCURRENT_SESSIONS=True."
            )
        )


class SessionCapacityError(CapacityReached):
    """Every session slot is taken (wire code ``CAPACITY_REACHED``)."""

    def __init__(self, active_sessions: int, max_sessions: int, message: str | None = None) -> None:
        self.active_sessions = active_sessions
        self.max_sessions = max_sessions
        super().__init__(
            message
            or f"Server at capacity: {active_sessions}/{max_sessions} sessions active. "
            "Cannot accept new connections.",
            active_sessions=active_sessions,
            max_sessions=max_sessions,
        )


class SessionNotFoundError(SessionNotFound):
    def __init__(self, session_id: str, message: str | None = None) -> None:
        self.session_id = session_id
        super().__init__(message or f"Session '{session_id}' not found.", session_id=session_id)


class SessionCreationError(SessionError):
    def __init__(self, reason: str, message: str | None = None) -> None:
        self.reason = reason
        super().__init__(message or f"Failed to create session: {reason}", reason=reason)


class EnvironmentFactoryError(FactoryError):
    def __init__(self, factory_name: str, message: str | None = None) -> None:
        self.factory_name = factory_name
        super().__init__(
            message or f"Environment factory '{factory_name}' failed to create instance.",
            factory_name=factory_name,
        )


__all__ = [
    "Action",
    "BaseMessage",
    "CallToolAction",
    "CallToolObservation",
    "CodeExecResult",
    "ConcurrencyConfig",
    "ConcurrencyConfigurationError",
    "EnvironmentFactoryError",
    "EnvironmentMetadata",
    "GetTaskRangeRequest",
    "GetTaskRequest",
    "HealthResponse",
    "HealthStatus",
    "ListTasksRequest",
    "ListToolsAction",
    "McpMethod",
    "NumTasksRequest",
    "Observation",
    "OpenEnvError",
    "ResetRequest",
    "ResetResponse",
    "Scalar",
    "SchemaResponse",
    "ServerCapacityStatus",
    "ServerMode",
    "SessionCapacityError",
    "SessionCreationError",
    "SessionInfo",
    "SessionNotFoundError",
    "State",
    "StepRequest",
    "StepResponse",
    "ToolError",
    "ToolErrorType",
    "WSCloseMessage",
    "WSErrorCode",
    "WSErrorResponse",
    "WSIncomingMessage",
    "WSMCPMessage",
    "WSMCPResponse",
    "WSObservationResponse",
    "WSResetMessage",
    "WSStateMessage",
    "WSStateResponse",
    "WSStepMessage",
]
