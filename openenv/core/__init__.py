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

#: Besides these, every name of ``openenv.core.env_server`` (its ``__all__``, the one list of
#: them), as upstream's ``openenv.core`` re-exports them; ``__all__`` is made on first use.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    _CLIENT_NAMES,
    also=".env_server",
    missing=dict.fromkeys(
        ("WebInterfaceManager", "create_web_interface_app"),
        "its Gradio web UI; our playground is served at /web",
    ),
)
