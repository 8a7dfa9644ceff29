"""Builds what ``/mcp`` serves (imported lazily: this is where the SDK loads)."""

from __future__ import annotations

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from .._env import EnvClass
from ..server._sessions import SessionManager
from ..server._settings import ServerSettings
from ._bridge import EnvMcpServer
from ._compat import CompatRpc


def build(
    env_class: EnvClass, manager: SessionManager, settings: ServerSettings
) -> tuple[StreamableHTTPSessionManager, CompatRpc]:
    bridge = EnvMcpServer(env_class, manager)
    # The server's Admission checks Host and Origin before any request reaches /mcp, for
    # every dialect alike (openenv.server._origin): the SDK's own guard, with its fixed
    # lists, would only refuse what --allowed-hosts / --allowed-origins let in.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    sdk = StreamableHTTPSessionManager(
        app=bridge.server,
        security_settings=security,
        session_idle_timeout=settings.idle_timeout_s if settings.idle_timeout_s > 0 else None,
        max_sessions=manager.max_sessions,
    )
    return sdk, CompatRpc(bridge)
