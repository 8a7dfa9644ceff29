"""Protocol endpoints plugged into an env app: the server's one seam for other protocols.

An *endpoint factory* gets the app's env class, session manager and settings and
returns a ``ProtocolEndpoint``, or None when it has nothing to serve (say its extra is
not installed). The app mounts each endpoint's routes before its own, runs each one's
``running()`` inside its lifespan, and hands the wire's JSON-RPC frames
(``{"type": "mcp"}`` on ``/ws``) to the endpoints in turn; when none answers, the
``_jsonrpc`` stub does.

Factories are ``create_app(endpoints=...)``, or by default those installed packages
declare in the ``openenv.endpoints`` entry-point group (as envs are declared in
``openenv.envs``). openenv's MCP bridge is one: ``mcp = "openenv.mcp._http:mcp_endpoint"``
in pyproject.toml. The server imports no protocol package itself.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ._jsonrpc import mcp_not_supported

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from .._env import EnvClass
    from ._sessions import Session, SessionManager
    from ._settings import ServerSettings

ENTRY_POINT_GROUP = "openenv.endpoints"


class ProtocolEndpoint(Protocol):
    """A protocol served beside an env's own routes."""

    @property
    def routes(self) -> Sequence[BaseRoute]:
        """Mounted before the env's routes (so they may take a path the env has a stub at)."""
        ...

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Entered when the app starts, exited when it stops."""
        ...

    async def ws_message(self, request: Any, session: Session | None) -> dict[str, Any] | None:
        """The reply to a JSON-RPC frame from a WebSocket bound to ``session``; None: not mine."""
        ...


EndpointFactory = Callable[["EnvClass", "SessionManager", "ServerSettings"], "ProtocolEndpoint | None"]


@functools.cache
def installed_endpoints() -> tuple[EndpointFactory, ...]:
    """The factories of the ``openenv.endpoints`` entry-point group, by entry name."""
    entries = sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    return tuple(ep.load() for ep in entries)


class Mounts:
    """The endpoints of one app: their routes, their lifespan, their WebSocket frames."""

    def __init__(self, endpoints: Sequence[ProtocolEndpoint] = ()) -> None:
        self.endpoints = tuple(endpoints)

    @classmethod
    def build(
        cls,
        factories: Sequence[EndpointFactory],
        env_class: EnvClass,
        manager: SessionManager,
        settings: ServerSettings,
    ) -> Mounts:
        built = (factory(env_class, manager, settings) for factory in factories)
        return cls([endpoint for endpoint in built if endpoint is not None])

    @property
    def routes(self) -> list[BaseRoute]:
        return [route for endpoint in self.endpoints for route in endpoint.routes]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for endpoint in self.endpoints:
                await stack.enter_async_context(endpoint.running())
            yield

    async def ws_message(self, request: Any, session: Session | None) -> dict[str, Any]:
        """The reply ``data`` for a ``{"type": "mcp"}`` message on a WebSocket."""
        for endpoint in self.endpoints:
            reply = await endpoint.ws_message(request, session)
            if reply is not None:
                return reply
        return mcp_not_supported(request)
