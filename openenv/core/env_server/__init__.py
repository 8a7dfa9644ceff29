"""Upstream OpenEnv's server-side API (``openenv.core.env_server``) over our server.

Upstream env packages import their base classes, models and ``create_app`` from here;
each name is a thin adapter over ``openenv``'s own model layer and server (see
``docs/upstream.md``). ``MCPEnvironment`` needs FastMCP only when an env is built.
"""

from ..._lazy import lazy_exports as _lazy_exports
from .base_transforms import CompositeTransform, NullTransform
from .exceptions import (
    ConcurrencyConfigurationError,
    EnvironmentFactoryError,
    OpenEnvError,
    SessionCapacityError,
    SessionCreationError,
    SessionNotFoundError,
)
from .http_server import HTTPEnvServer, create_app, create_fastapi_app
from .interfaces import Environment, Message, ModelTokenizer, TaskProvider, Transform
from .mcp_environment import MCPEnvironment
from .mcp_types import (
    RESERVED_TOOL_NAMES,
    CallToolAction,
    CallToolObservation,
    JsonRpcError,
    JsonRpcErrorCode,
    JsonRpcRequest,
    JsonRpcResponse,
    ListToolsAction,
    ListToolsObservation,
    McpMethod,
    Tool,
    ToolError,
    ToolErrorType,
    WSMCPMessage,
    WSMCPResponse,
)
from .route_config import GetEndpointConfig
from .serialization import deserialize_action, deserialize_action_with_preprocessing, serialize_observation
from .types import (
    Action,
    BaseMessage,
    CodeExecResult,
    ConcurrencyConfig,
    EnvironmentMetadata,
    GetTaskRangeRequest,
    GetTaskRequest,
    HealthResponse,
    HealthStatus,
    ListTasksRequest,
    NumTasksRequest,
    Observation,
    SchemaResponse,
    ServerCapacityStatus,
    ServerMode,
    SessionInfo,
    State,
    WSCloseMessage,
    WSErrorCode,
    WSErrorResponse,
    WSIncomingMessage,
    WSObservationResponse,
    WSResetMessage,
    WSStateMessage,
    WSStateResponse,
    WSStepMessage,
)

#: Upstream's Gradio web UI is not part of this package (our playground is ``/web``).
__getattr__ = _lazy_exports(
    __name__,
    {},
    missing=dict.fromkeys(
        ("WebInterfaceManager", "create_web_interface_app"),
        "its Gradio web UI; our playground is served at /web",
    ),
)[0]

__all__ = [
    "RESERVED_TOOL_NAMES", "Action", "BaseMessage", "CallToolAction", "CallToolObservation",
    "CodeExecResult", "CompositeTransform", "ConcurrencyConfig", "ConcurrencyConfigurationError",
    "Environment", "EnvironmentFactoryError", "EnvironmentMetadata", "GetEndpointConfig",
    "GetTaskRangeRequest", "GetTaskRequest", "HTTPEnvServer", "HealthResponse", "HealthStatus",
    "JsonRpcError", "JsonRpcErrorCode", "JsonRpcRequest", "JsonRpcResponse", "ListTasksRequest",
    "ListToolsAction", "ListToolsObservation", "MCPEnvironment", "McpMethod", "Message", "ModelTokenizer",
    "NullTransform", "NumTasksRequest", "Observation", "OpenEnvError", "SchemaResponse",
    "ServerCapacityStatus", "ServerMode", "SessionCapacityError", "SessionCreationError", "SessionInfo",
    "SessionNotFoundError", "State", "TaskProvider", "Tool", "ToolError", "ToolErrorType", "Transform",
    "WSCloseMessage", "WSErrorCode", "WSErrorResponse", "WSIncomingMessage", "WSMCPMessage",
    "WSMCPResponse", "WSObservationResponse", "WSResetMessage", "WSStateMessage", "WSStateResponse",
    "WSStepMessage", "create_app", "create_fastapi_app", "deserialize_action",
    "deserialize_action_with_preprocessing", "serialize_observation",
]
