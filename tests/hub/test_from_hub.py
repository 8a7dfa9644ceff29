"""``EnvClient.from_hub`` / ``AsyncEnvClient.from_hub`` with the fake Hub (a TEST DOUBLE).

The live-Space path connects to a local echo server standing in for ``*.hf.space``
(``url=``); the Space's privacy, read from the fake Hub, decides whether the token goes
along. Building the Space image (``use_docker``) is in ``tests/authoring/test_build.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from echo_env import MODELS, EchoAction, EchoEnv

from openenv import AsyncEnvClient, EnvClient
from openenv.hub import HubError, resolve_hub_target, space_url

from .fake_hub import FakeHub, FakeRepo


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    server = FakeHub().start()
    for repo_id, private in (("alice/echo", True), ("org/echo", False)):
        server.repos[repo_id] = FakeRepo(repo_id, private=private, sdk="docker", commits=["c" * 40])
    yield server
    server.stop()


def test_space_url():
    assert space_url("Org/My_Env.v2") == "https://org-my-env-v2.hf.space"


def test_private_space_gets_the_token_and_works(hub: FakeHub, serve):
    url = serve(EchoEnv).url
    with EnvClient.from_hub("alice/echo", MODELS, url=url, token=hub.token, endpoint=hub.url) as env:
        assert env.headers == {"Authorization": f"Bearer {hub.token}"}
        env.reset()
        assert env.step(EchoAction(message="hub")).observation.echoed_message == "hub"


def test_public_space_never_sees_the_token(hub: FakeHub, serve):
    url = serve(EchoEnv).url
    with EnvClient.from_hub("org/echo", MODELS, url=url, token=hub.token, endpoint=hub.url) as env:
        assert env.headers == {}
        env.reset()


async def test_async_client(hub: FakeHub, serve):
    url = serve(EchoEnv).url
    env = await AsyncEnvClient.from_hub("alice/echo", MODELS, url=url, token=hub.token, endpoint=hub.url)
    async with env:
        assert env.headers["Authorization"] == f"Bearer {hub.token}"
        await env.reset()
        result = await env.step(EchoAction(message="async"))
        assert result.reward == pytest.approx(0.5)


def test_private_space_without_token(hub: FakeHub, monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(HubError, match="looking up Space alice/echo failed"):
        resolve_hub_target("alice/echo", endpoint=hub.url)  # private: the Hub says not found


def test_docker_needs_trust_and_fetches_nothing_without_it(hub: FakeHub):
    before = len(hub.calls)
    with pytest.raises(HubError, match="pass trust_remote_code=True"):
        EnvClient.from_hub("org/echo", MODELS, use_docker=True, token=hub.token, endpoint=hub.url)
    assert len(hub.calls) == before
