"""The proxy's backend client (``openenv.capture._http``) against raw asyncio servers on
loopback: a keep-alive connection the server closed meanwhile is retried once on a new
one, a reply cut halfway and a refused connection fail with the named error."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from openenv.capture._http import HttpError, HttpPool

pytestmark = pytest.mark.timeout(30)
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\nhello"


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    return head + await reader.readexactly(length)


async def with_server(handler: Handler, body: Callable[[HttpPool], Awaitable[None]]) -> None:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = HttpPool(f"http://127.0.0.1:{port}/v1", timeout_s=10)
    try:
        await body(pool)
    finally:
        await pool.aclose()
        server.close()
        await server.wait_closed()


def test_a_stale_keep_alive_connection_is_retried_on_a_new_one() -> None:
    connections: list[int] = []
    seen: list[bytes] = []

    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        seen.append(await read_request(reader))
        writer.write(OK)  # says keep-alive (HTTP/1.1), then closes: the pooled connection goes stale
        await writer.drain()
        writer.close()

    async def body(pool: HttpPool) -> None:
        head = pool.head("POST", "/chat/completions", {"content-type": "application/json"})
        for _ in range(3):
            reply = await pool.request(head, b"{}")
            assert (reply.status, await reply.read()) == (200, b"hello")
            await asyncio.sleep(0.05)  # the server's close reaches us

    asyncio.run(with_server(once, body))
    assert len(connections) == 3
    assert all(s.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") for s in seen)
    assert all(s.endswith(b"content-length: 2\r\n\r\n{}") for s in seen)


def test_keep_alive_connections_are_reused() -> None:
    connections: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                break
            writer.write(OK)
            await writer.drain()

    async def body(pool: HttpPool) -> None:
        head = pool.head("GET", "/models", {})
        for _ in range(5):
            reply = await pool.request(head)
            assert await reply.read() == b"hello"

    asyncio.run(with_server(serve, body))
    assert len(connections) == 1


def test_a_reply_cut_halfway_is_a_protocol_error_and_not_retried() -> None:
    calls: list[int] = []

    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        calls.append(1)
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nhalf")
        await writer.drain()
        writer.close()

    async def body(pool: HttpPool) -> None:
        reply = await pool.request(pool.head("POST", "/x", {}), b"{}")
        with pytest.raises(HttpError) as err:
            await reply.read()
        assert err.value.kind == "RemoteProtocolError"
        assert err.value.got_reply

    asyncio.run(with_server(cut, body))
    assert len(calls) == 1


def test_a_refused_connection_is_a_connect_error() -> None:
    async def body() -> None:
        pool = HttpPool("http://127.0.0.1:9/v1", timeout_s=5)
        with pytest.raises(HttpError) as err:
            await pool.request(pool.head("GET", "/models", {}))
        assert err.value.kind == "ConnectError"

    asyncio.run(body())
