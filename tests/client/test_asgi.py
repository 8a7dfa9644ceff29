"""``ASGITransport`` on its own: an app served with no socket and no live server."""

from __future__ import annotations

import pytest

from openenv import AsyncEnvClient, EnvClient
from openenv.client import ASGITransport
from openenv.server import ServerSettings, create_app

from .._envs import MODELS, TAction, make_env

pytestmark = pytest.mark.socket_only  # builds its own transport: run once


def test_sync_client_in_process_runs_the_lifespan():
    env = make_env()
    app = create_app(env, settings=ServerSettings(idle_timeout_s=0))
    transport = ASGITransport(app)
    with transport, EnvClient("http://in-process", MODELS, transport=transport) as client:
        assert client.extended
        client.reset(seed=3)
        assert client.step(TAction(message="x")).observation.message == "x"
        assert app.state.sessions.active == 1
    assert env.tracker.close_counts() == [1]  # lifespan shutdown closed what was left


async def test_async_client_in_process():
    env = make_env("async")
    app = create_app(env, settings=ServerSettings(idle_timeout_s=0))
    async with ASGITransport(app) as transport:
        async with AsyncEnvClient("http://in-process", MODELS, transport=transport) as client:
            await client.reset_batch(["a", "b"])
            out = await client.step_batch({"a": TAction(message="1"), "b": TAction(message="2")})
        assert [r.observation.message for r in out] == ["1", "2"]
