"""Builds what ``/mcp`` serves (imported lazily: this is where the SDK loads)."""

from __future__ import annotations

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from .._env import EnvClass
from ..server._sessions import SessionManager
from ..server._settings import ServerSettings
from ._bridge import EnvMcpServer
from ._compat import CompatRpc

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def loopback(settings: ServerSettings) -> bool:
    return settings.host in _LOOPBACK


def build(
    env_class: EnvClass, manager: SessionManager, settings: ServerSettings
) -> tuple[StreamableHTTPSessionManager, CompatRpc]:
    bridge = EnvMcpServer(env_class, manager)
    security = None
    if loopback(settings):  # the SDK's DNS-rebinding guard, as its own apps enable it on loopback
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    sdk = StreamableHTTPSessionManager(
        app=bridge.server,
        security_settings=security,
        session_idle_timeout=settings.idle_timeout_s if settings.idle_timeout_s > 0 else None,
        max_sessions=manager.max_sessions,
    )
    return sdk, CompatRpc(bridge)
