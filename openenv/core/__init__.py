"""``openenv.core``: upstream OpenEnv's import paths, as thin adapters over this package.

Env packages written against upstream (``from openenv.core import EnvClient``,
``from openenv.core.env_server.types import Action``) run unchanged. Everything
loads on first use: ``import openenv.core`` imports nothing heavy, the client names
load the client adapters (``env_client``, ``sync_client``...), and the env-server names
(``Action``, ``Environment``, ``create_app``...) come from ``openenv.core.env_server``.
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .client_types import StepResult  # noqa: F401
    from .env_client import EnvClient  # noqa: F401
    from .generic_client import GenericAction, GenericEnvClient  # noqa: F401
    from .llm_client import LLMClient, LLMResponse, ToolCall  # noqa: F401
    from .mcp_client import MCPClientBase, MCPToolClient  # noqa: F401
    from .sync_client import SyncEnvClient  # noqa: F401

_CLIENT_NAMES = {
    "EnvClient": ".env_client",
    "GenericAction": ".generic_client",
    "GenericEnvClient": ".generic_client",
    "LLMClient": ".llm_client",
    "LLMResponse": ".llm_client",
    "MCPClientBase": ".mcp_client",
    "MCPToolClient": ".mcp_client",
    "StepResult": ".client_types",
    "SyncEnvClient": ".sync_client",
    "ToolCall": ".llm_client",
}

#: Names upstream's ``openenv.core`` re-exports from ``openenv.core.env_server``.
_SERVER_NAMES = (
    "Action", "BaseMessage", "CallToolAction", "CallToolObservation", "CompositeTransform",
    "ConcurrencyConfig", "ConcurrencyConfigurationError", "Environment", "EnvironmentFactoryError",
    "GetEndpointConfig", "GetTaskRangeRequest", "GetTaskRequest", "HTTPEnvServer", "HealthResponse",
    "HealthStatus", "JsonRpcError", "JsonRpcErrorCode", "JsonRpcRequest", "JsonRpcResponse",
    "ListTasksRequest", "ListToolsAction", "ListToolsObservation", "MCPEnvironment", "McpMethod",
    "Message", "ModelTokenizer", "NullTransform", "NumTasksRequest", "Observation", "OpenEnvError",
    "RESERVED_TOOL_NAMES", "SchemaResponse", "ServerCapacityStatus", "ServerMode",
    "SessionCapacityError", "SessionCreationError", "SessionInfo", "SessionNotFoundError", "State",
    "TaskProvider", "Tool", "ToolError", "ToolErrorType", "Transform", "WSCloseMessage",
    "WSErrorCode", "WSErrorResponse", "WSIncomingMessage", "WSMCPMessage", "WSMCPResponse",
    "WSObservationResponse", "WSResetMessage", "WSStateMessage", "WSStateResponse", "WSStepMessage",
    "create_app", "create_fastapi_app",
    "deserialize_action", "deserialize_action_with_preprocessing", "serialize_observation",
)

#: Sorted as ruff's RUF022 sorts: SCREAMING_CASE, then CamelCase, then the rest.
__all__ = sorted([*_CLIENT_NAMES, *_SERVER_NAMES], key=lambda n: (not n.isupper(), not n[:1].isupper(), n))


__getattr__, __dir__ = _lazy_exports(
    __name__,
    {**_CLIENT_NAMES, **dict.fromkeys(_SERVER_NAMES, ".env_server")},
    __all__,
    missing=dict.fromkeys(
        ("WebInterfaceManager", "create_web_interface_app"),
        "its Gradio web UI; our playground is served at /web",
    ),
)
