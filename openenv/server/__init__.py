"""Serve an environment: ``create_app`` for an ASGI app, ``serve`` to run it.

The names load on first use (the ``server`` extra: Starlette, uvicorn), so the CLI's
parser can read ``openenv serve``'s arguments (``_cli``) without loading a server.
"""

import typing as _typing

from .._extras import require as _require
from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._app import create_app
    from ._background import BackgroundServer, serve_in_background
    from ._mounts import EndpointFactory, ProtocolEndpoint
    from ._serve import serve
    from ._sessions import Session, SessionManager, SessionState
    from ._settings import ServerSettings

__all__ = [
    "BackgroundServer",
    "EndpointFactory",
    "ProtocolEndpoint",
    "ServerSettings",
    "Session",
    "SessionManager",
    "SessionState",
    "create_app",
    "serve",
    "serve_in_background",
]



def _needs_the_extra(name: str) -> None:
    _require("starlette", extra="server", feature="openenv.server")


__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "BackgroundServer": "._background", "EndpointFactory": "._mounts", "ProtocolEndpoint": "._mounts",
        "ServerSettings": "._settings", "Session": "._sessions", "SessionManager": "._sessions",
        "SessionState": "._sessions", "create_app": "._app", "serve": "._serve",
        "serve_in_background": "._background",
    },
    __all__,
    check=_needs_the_extra,
)
