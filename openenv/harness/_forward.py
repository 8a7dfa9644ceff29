"""``forward_to_loopback``: a unix socket whose connections are piped to one loopback URL's port.

The host side of a sandboxed agent's way to the env's MCP tools: the socket is
bind-mounted into the sandbox (the relay there listens on a loopback port of its own),
and every connection on it reaches the bridge's ``127.0.0.1:PORT``, nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

from .._exceptions import ValidationFailed

__all__ = ["forward_to_loopback", "loopback_address"]

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def loopback_address(url: str) -> tuple[str, int]:
    """The host and port of an ``http://`` URL on loopback.

    Raises:
        ValidationFailed: not an ``http`` URL with a port on a loopback host.
    """
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or parts.hostname not in _LOOPBACK or port is None:
        raise ValidationFailed(f"the tool bridge must be an http URL on loopback with a port, not {url!r}")
    return parts.hostname, port


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.write_eof()


async def _relay_connection(
    host: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Pipe one accepted connection both ways to ``host:port`` until either side ends."""
    try:
        up_reader, up_writer = await asyncio.open_connection(host, port)
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    finally:
        for w in (writer, up_writer):
            w.close()


@contextlib.asynccontextmanager
async def forward_to_loopback(path: str, url: str) -> AsyncIterator[None]:
    """Serve unix socket ``path`` (mode 0666: the sandbox's uid connects) on the running
    loop, each connection piped to ``url``'s loopback port, until the block ends."""
    host, port = loopback_address(url)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server = await asyncio.start_unix_server(lambda r, w: _relay_connection(host, port, r, w), path=path)
    os.chmod(path, 0o666)
    try:
        yield
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
