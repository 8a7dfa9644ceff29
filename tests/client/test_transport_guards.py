"""What the clients' transport must do, each against a server that needs it: handshake
headers, fragmented messages, a handshake that never completes, TLS (``wss://``), and
``from_provider`` giving back a replica it could not connect to.

Servers bind 127.0.0.1 on a free port and are stopped at teardown; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from openenv import AsyncEnvClient, EnvClient
from openenv._exceptions import ConnectError
from openenv.server import ServerSettings, create_app
from openenv.server._serve import uvicorn_options

from .._envs import MODELS, PidEnv, TAction
from ..conftest import LiveServer, free_port

pytestmark = pytest.mark.socket_only  # each test is about the socket itself
TOKEN = "Bearer s3cret"


# --- headers= -------------------------------------------------------------------------------


class RequireAuth:
    """ASGI wrapper: a WebSocket handshake without ``Authorization: Bearer s3cret`` is
    refused (HTTP 403), as a private deployment behind an auth proxy does."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = app.state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket" and (b"authorization", TOKEN.encode()) not in scope["headers"]:
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)


@pytest.fixture
def auth_server() -> Iterator[LiveServer]:
    settings = ServerSettings(host="127.0.0.1", port=0, ping_interval_s=0, ping_timeout_s=0).validated()
    server = LiveServer(RequireAuth(create_app(PidEnv, settings=settings)), settings, PidEnv).start()
    yield server
    server.stop()


def test_sync_client_sends_its_headers(auth_server: LiveServer) -> None:
    with EnvClient(auth_server.url, MODELS, headers={"Authorization": TOKEN}) as env:
        assert env.reset().observation.message == "ready"
    with pytest.raises(ConnectError), EnvClient(auth_server.url, MODELS) as env:
        env.reset()


async def test_async_client_sends_its_headers(auth_server: LiveServer) -> None:
    async with AsyncEnvClient(auth_server.url, MODELS, headers={"Authorization": TOKEN}) as env:
        assert (await env.reset()).observation.message == "ready"
    with pytest.raises(ConnectError):
        async with AsyncEnvClient(auth_server.url, MODELS) as env:
            await env.reset()


# --- fragmented messages ----------------------------------------------------------------------


class FragmentingServer:
    """A raw ``websockets`` server speaking upstream's frames, sending every reply as a
    fragmented message (a text frame and continuation frames), as proxies may."""

    def __init__(self) -> None:
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.stop_event: asyncio.Event | None = None
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.main(),), daemon=True)

    async def main(self) -> None:
        from websockets.asyncio.server import ServerConnection, serve

        self.stop_event = asyncio.Event()

        async def handler(ws: ServerConnection) -> None:
            async for raw in ws:
                kind = json.loads(raw)["type"]
                message = "x" * 5000 if kind == "step" else "ready"
                obs = {"message": message, "pid": 7, "metadata": {}}
                reply = json.dumps({"type": "observation", "data": {"observation": obs, "reward": 1.0,
                                                                   "done": False}})
                third = len(reply) // 3
                await ws.send([reply[:third], reply[third:2 * third], reply[2 * third:]])

        async with serve(handler, "127.0.0.1", self.port, compression=None, close_timeout=1):
            self.ready.set()
            await self.stop_event.wait()

    def __enter__(self) -> str:
        self.thread.start()
        assert self.ready.wait(10), "fragmenting server did not start"
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        assert self.stop_event is not None
        self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(10)


def test_sync_client_reassembles_fragmented_messages() -> None:
    with FragmentingServer() as url, EnvClient(url, MODELS, extensions=False, timeout_s=10) as env:
        assert env.reset().observation.message == "ready"
        result = env.step(TAction(message="hi"))
        assert result.observation.message == "x" * 5000
        assert result.reward == 1.0


async def test_async_client_reassembles_fragmented_messages() -> None:
    with FragmentingServer() as url:
        async with AsyncEnvClient(url, MODELS, extensions=False, timeout_s=10) as env:
            assert (await env.reset()).observation.message == "ready"
            assert (await env.step(TAction(message="hi"))).observation.message == "x" * 5000


# --- a handshake that never completes ---------------------------------------------------------


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts TCP connections and never answers the handshake."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in accepted:
        conn.close()
    sock.close()


def test_sync_handshake_timeout_is_a_connect_error(silent_server: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(ConnectError), EnvClient(silent_server, MODELS, connect_timeout_s=0.5) as env:
        env.reset()
    assert time.monotonic() - t0 < 5


async def test_async_handshake_timeout_is_a_connect_error(silent_server: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(ConnectError):
        async with AsyncEnvClient(silent_server, MODELS, connect_timeout_s=0.5) as env:
            await env.reset()
    assert time.monotonic() - t0 < 5


# --- from_provider gives back a replica it cannot connect to ----------------------------------


class DeadReplica:
    """Test double of a replica whose server does not answer (nothing listens there)."""

    def __init__(self) -> None:
        self.base_url = f"http://127.0.0.1:{free_port()}"
        self.stops = 0

    def alive(self) -> bool:
        return False

    def logs(self, tail: int = 50) -> str:
        return ""

    def stop(self) -> None:
        self.stops += 1


class OneReplicaProvider:
    """Test double of a provider: hands out one given replica."""

    def __init__(self, replica: DeadReplica) -> None:
        self.replica = replica

    def start(self) -> DeadReplica:
        return self.replica


def test_sync_from_provider_stops_the_replica_when_connect_fails() -> None:
    replica = DeadReplica()
    with pytest.raises(ConnectError):
        EnvClient.from_provider(OneReplicaProvider(replica), MODELS, connect_timeout_s=2)
    assert replica.stops == 1


async def test_async_from_provider_stops_the_replica_when_connect_fails() -> None:
    replica = DeadReplica()
    with pytest.raises(ConnectError):
        await AsyncEnvClient.from_provider(OneReplicaProvider(replica), MODELS, connect_timeout_s=2)
    assert replica.stops == 1


# --- wss:// -----------------------------------------------------------------------------------


def self_signed(tmp: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its own CA), made here with ``cryptography``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))])
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    cert, key = self_signed(tmp_path)
    settings = ServerSettings(host="127.0.0.1", port=0, ping_interval_s=0, ping_timeout_s=0).validated()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    options = uvicorn_options(settings)
    options.update(host="127.0.0.1", port=sock.getsockname()[1], ssl_certfile=str(cert), ssl_keyfile=str(key))
    server = uvicorn.Server(uvicorn.Config(create_app(PidEnv, settings=settings), **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive(), "TLS server died on start"
        assert time.monotonic() < deadline, "TLS server did not start"
        time.sleep(0.01)
    yield f"https://127.0.0.1:{sock.getsockname()[1]}", cert
    server.should_exit = True
    thread.join(10)
    sock.close()


def test_sync_client_over_wss(tls_server: tuple[str, Path], monkeypatch) -> None:
    url, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # what ssl.create_default_context() trusts
    assert ssl.get_default_verify_paths().cafile == str(cert)
    with EnvClient(url, MODELS, connect_timeout_s=5) as env:
        assert env.reset().observation.message == "ready"
        assert env.step(TAction(message="over tls")).observation.message == "over tls"


async def test_async_client_over_wss(tls_server: tuple[str, Path], monkeypatch) -> None:
    url, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    async with AsyncEnvClient(url, MODELS, connect_timeout_s=5) as env:
        await env.reset()
        assert (await env.step(TAction(message="over tls"))).observation.message == "over tls"


def test_sync_client_over_wss_refuses_an_untrusted_certificate(tls_server: tuple[str, Path]) -> None:
    url, _ = tls_server
    client = EnvClient(url, MODELS, connect_timeout_s=5)
    with pytest.raises(ConnectError, match="TLS handshake"), client as env:
        env.reset()


async def test_async_client_over_wss_refuses_an_untrusted_certificate(tls_server: tuple[str, Path]) -> None:
    url, _ = tls_server
    with pytest.raises(ConnectError, match="certificate verify failed"):
        await AsyncEnvClient(url, MODELS, connect_timeout_s=5).connect()
