"""Upstream OpenEnv's server-side API (``openenv.core.env_server``) over our server.

Upstream env packages import their base classes, models and ``create_app`` from here;
each name is a thin adapter over ``openenv``'s own model layer and server (see
``docs/upstream.md``). ``MCPEnvironment`` needs FastMCP only when an env is built.
"""

from ..._lazy import export_list as _export_list
from ..._lazy import lazy_exports as _lazy_exports
from . import (
    base_transforms,
    exceptions,
    http_server,
    interfaces,
    mcp_environment,
    mcp_types,
    route_config,
    serialization,
    types,
)
from .base_transforms import *  # noqa: F403
from .exceptions import *  # noqa: F403
from .http_server import *  # noqa: F403
from .interfaces import *  # noqa: F403
from .mcp_environment import *  # noqa: F403
from .mcp_types import *  # noqa: F403
from .route_config import *  # noqa: F403
from .serialization import *  # noqa: F403
from .types import *  # noqa: F403

#: Upstream's Gradio web UI is not part of this package (our playground is ``/web``).
__getattr__ = _lazy_exports(
    __name__,
    {},
    missing=dict.fromkeys(
        ("WebInterfaceManager", "create_web_interface_app"),
        "its Gradio web UI; our playground is served at /web",
    ),
)[0]

#: Every name of the modules above (each module's ``__all__`` is the one list of its names).
__all__ = _export_list(
    base_transforms, exceptions, http_server, interfaces, mcp_environment, mcp_types, route_config,
    serialization, types,
)
