"""openenv: typed environments for RL on LLM agents, served over HTTP and WebSocket.

Importing this package loads the models, the env base classes and the exceptions; the
clients load on first use, the server (``openenv.server``) when imported.
"""

import typing as _typing

from ._env import AsyncEnvironment, Environment, Execution
from ._exceptions import (
    BatchError,
    CapacityReached,
    ConnectError,
    ConnectionClosed,
    DeadlineExceeded,
    ErrorCode,
    ExecutionError,
    FactoryError,
    Forbidden,
    FrameTooLarge,
    HubError,
    InvalidJSON,
    OpenEnvError,
    ProviderError,
    QuotaExceeded,
    ReplicaLost,
    RequestTimeout,
    ResetRequired,
    SandboxError,
    SandboxUnavailable,
    SessionBusy,
    SessionClosed,
    SessionError,
    SessionNotFound,
    StartupFailed,
    TaskNotFound,
    TransportError,
    Unauthorized,
    UnknownMessageType,
    ValidationFailed,
    WireError,
)
from ._lazy import lazy_exports as _lazy_exports
from ._models import (
    GENERIC_MODELS,
    Action,
    EnvironmentMetadata,
    EnvModels,
    Observation,
    State,
    StepResult,
)
from ._types import JSON_INTEGER, JsonInt
from ._version import __version__

if _typing.TYPE_CHECKING:
    from .auto import AutoAction, AutoEnv
    from .client import AsyncEnvClient, EnvClient
    from .core.generic_client import GenericAction, GenericEnvClient
    from .core.sync_client import SyncEnvClient

__all__ = [
    "GENERIC_MODELS",
    "JSON_INTEGER",
    "Action",
    "AsyncEnvClient",
    "AsyncEnvironment",
    "AutoAction",
    "AutoEnv",
    "BatchError",
    "CapacityReached",
    "ConnectError",
    "ConnectionClosed",
    "DeadlineExceeded",
    "EnvClient",
    "EnvModels",
    "Environment",
    "EnvironmentMetadata",
    "ErrorCode",
    "Execution",
    "ExecutionError",
    "FactoryError",
    "Forbidden",
    "FrameTooLarge",
    "GenericAction",
    "GenericEnvClient",
    "HubError",
    "InvalidJSON",
    "JsonInt",
    "Observation",
    "OpenEnvError",
    "ProviderError",
    "QuotaExceeded",
    "ReplicaLost",
    "RequestTimeout",
    "ResetRequired",
    "SandboxError",
    "SandboxUnavailable",
    "SessionBusy",
    "SessionClosed",
    "SessionError",
    "SessionNotFound",
    "StartupFailed",
    "State",
    "StepResult",
    "SyncEnvClient",
    "TaskNotFound",
    "TransportError",
    "Unauthorized",
    "UnknownMessageType",
    "ValidationFailed",
    "WireError",
    "__version__",
]


# Clients load on first use: a server process never imports them. The upstream OpenEnv
# names (``from openenv import GenericEnvClient``, as verifiers' OpenEnv task set does)
# come from ``openenv.auto`` and ``openenv.core``'s public faces.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "EnvClient": ".client._sync",
        "AsyncEnvClient": ".client._async",
        "AutoAction": ".auto",
        "AutoEnv": ".auto",
        "GenericAction": ".core",
        "GenericEnvClient": ".core",
        "SyncEnvClient": ".core",
    },
    __all__,
)
