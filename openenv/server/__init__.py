"""Serve an environment: ``create_app`` for an ASGI app, ``serve`` to run it."""

from .._extras import require as _require

_require("starlette", extra="server", feature="openenv.server")
from ._app import create_app  # noqa: E402
from ._background import BackgroundServer, serve_in_background  # noqa: E402
from ._mounts import EndpointFactory, ProtocolEndpoint  # noqa: E402
from ._serve import serve  # noqa: E402
from ._sessions import Session, SessionManager, SessionState  # noqa: E402
from ._settings import ServerSettings  # noqa: E402

__all__ = [
    "BackgroundServer",
    "EndpointFactory",
    "ProtocolEndpoint",
    "ServerSettings", "Session", "SessionManager", "SessionState", "create_app",
    "serve",
    "serve_in_background",
]
