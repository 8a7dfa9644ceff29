"""Fixtures: the scripted backend (a test double, tests/capture/_scripted.py) and the real
capture proxy in front of it, each a real uvicorn server on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from openenv.capture import CaptureServer, Session
from openenv.server import serve_in_background

from ._scripted import ScriptedBackend


@pytest.fixture(scope="module")
def backend() -> Iterator[ScriptedBackend]:
    scripted = ScriptedBackend()
    with serve_in_background(scripted.app) as running:
        scripted.url = running.url + "/v1"
        yield scripted


@pytest.fixture(autouse=True)
def _backend_ok(request: pytest.FixtureRequest) -> None:
    if "backend" in request.fixturenames:
        request.getfixturevalue("backend").mode = "ok"


@pytest.fixture(scope="module")
def proxy(backend: ScriptedBackend) -> Iterator[CaptureServer]:
    with CaptureServer(llm_url=backend.url, port=0) as server:
        yield server


def new_session(proxy: CaptureServer, **metadata: object) -> Session:
    """A session minted over HTTP, as a trainer does; returns the live object."""
    reply = httpx.post(proxy.url + "/sessions", json={"metadata": metadata}, timeout=10)
    reply.raise_for_status()
    session = proxy.registry.get(reply.json()["session_id"])
    assert session is not None
    return session
