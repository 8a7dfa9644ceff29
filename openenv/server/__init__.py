"""Serve an environment: ``create_app`` for an ASGI app, ``serve`` to run it."""

from ._app import create_app
from ._serve import serve
from ._sessions import Session, SessionManager, SessionState
from ._settings import ServerSettings

__all__ = ["ServerSettings", "Session", "SessionManager", "SessionState", "create_app", "serve"]
