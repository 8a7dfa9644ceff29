"""``openenv mcp TARGET``: an env as an MCP server over stdio, for harnesses that spawn a command.

The process is one episode: one env session, reset before the first tool call and
closed when stdin ends. TARGET is one of:

* a served env's URL (``http://127.0.0.1:8000``): tool calls are relayed to its
  ``/mcp`` over one ``initialize`` session (so one env session there);
* an image (``openenv-echo``; with ``--image``, or when nothing local has that name):
  run as a container for the life of the process, then relayed like a URL;
* an env folder, ``module:Class`` or an installed env's name: served in-process.

Logs go to stderr; the SDK's stdio server diverts stray writes to fd 1 there too.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import mcp_types as mt
from mcp.client.client import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .._env import EnvClass
from .._exceptions import ProviderError
from ._bridge import EnvMcpServer


def _mcp_url(base: str, reset_options: Mapping[str, Any] | None) -> str:
    parts = urllib.parse.urlsplit(base)
    path = parts.path.rstrip("/")
    path = path if path.endswith("/mcp") else path + "/mcp"
    query = urllib.parse.parse_qsl(parts.query)
    for key, value in (reset_options or {}).items():
        query.append((key, value if isinstance(value, str) else _json(value)))
    return urllib.parse.urlunsplit(parts._replace(path=path, query=urllib.parse.urlencode(query)))


def _json(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()


def relay_server(client: Client, name: str) -> Server[Any]:
    """A server whose tools are another MCP server's (over ``client``)."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return await client.list_tools(cursor=params.cursor if params else None)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        return await client.call_tool(params.name, params.arguments)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def _first_error(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


@contextlib.asynccontextmanager
async def _remote(url: str, reset_options: Mapping[str, Any] | None) -> AsyncIterator[Server[Any]]:
    target = _mcp_url(url, reset_options)
    async with contextlib.AsyncExitStack() as stack:
        try:
            client = await stack.enter_async_context(Client(target, mode="legacy"))
        except Exception as exc:
            reason = _first_error(exc)
            raise ProviderError(
                f"no MCP session at {target}: {type(reason).__name__}: {reason} "
                "(is it an openenv server with the 'mcp' extra installed?)"
            ) from None
        yield relay_server(client, "openenv-relay")


@contextlib.asynccontextmanager
async def _image(image: str, reset_options: Mapping[str, Any] | None) -> AsyncIterator[Server[Any]]:
    from ..containers import DockerProvider

    replica = await anyio.to_thread.run_sync(DockerProvider(image).start)
    try:
        async with _remote(replica.base_url, reset_options) as server:
            yield server
    finally:
        await anyio.to_thread.run_sync(replica.stop)


@contextlib.asynccontextmanager
async def _local(env_class: EnvClass, reset_options: Mapping[str, Any] | None) -> AsyncIterator[Server[Any]]:
    from ..server import ServerSettings, create_app

    # No idle reaping: the episode lasts as long as the harness keeps the process.
    app = create_app(env_class, settings=ServerSettings.from_env(idle_timeout_s=0.0))
    async with app.router.lifespan_context(app):
        bridge = EnvMcpServer(env_class, app.state.sessions, reset_options=reset_options, scope="process")
        try:
            await bridge.start()  # the episode starts now: its first observation is in the instructions
            yield bridge.server
        finally:
            await bridge.close()


def _local_image(name: str) -> bool:
    """Whether a Docker engine answers and holds an image of that name."""
    try:
        import docker

        with contextlib.closing(docker.from_env(timeout=5)) as client:
            client.images.get(name)
    except Exception:
        return False
    return True


def _source(target: str, image: bool, reset_options: Mapping[str, Any] | None) -> Any:
    if target.startswith(("http://", "https://")):
        return _remote(target, reset_options)
    if image:
        return _image(target, reset_options)
    from ..server._serve import EnvNotFound, load_env_class, resolve_target

    try:
        env_class = load_env_class(*resolve_target(target))
    except EnvNotFound as exc:
        if _local_image(target):
            return _image(target, reset_options)
        raise EnvNotFound(f"{exc} (and no Docker image {target!r} here)") from None
    return _local(env_class, reset_options)


async def serve_stdio(
    target: str, *, image: bool = False, reset_options: Mapping[str, Any] | None = None
) -> None:
    """Serve ``target`` as an MCP server on this process's stdin and stdout until stdin ends."""
    async with _source(target, image, reset_options) as server, stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
