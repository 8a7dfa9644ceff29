"""``openenv._health``: the one /health probe and the one cached liveness check, against a
real loopback server; every provider, pool and worker uses them (checked by source)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest

import openenv._health as health_mod
from openenv._health import CachedHealth, health_error, is_healthy
from tests.containers.test_wait_healthy import Health


@pytest.fixture
def health() -> Iterator[Health]:
    h = Health()
    yield h
    h.close()


def test_probe_answers_200_and_says_why_not(health: Health) -> None:
    assert health_error(health.url) is None
    assert is_healthy(health.url + "/")
    health.script = [503]
    assert health_error(health.url) == "Service Unavailable"  # the reason urllib gives
    assert not is_healthy("127.0.0.1:1")  # not an http(s) URL: no request, False
    assert "not an http(s) URL" in (health_error("ws://127.0.0.1:1") or "")


def test_probe_of_a_closed_port_is_false() -> None:
    h = Health()
    url = h.url
    h.close()
    assert not is_healthy(url, timeout_s=2)


def test_cached_health_asks_once_per_ttl_and_forget_asks_again(
    health: Health, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(health_mod, "HEALTH_TTL_S", 3600.0)
    check = CachedHealth(health.url)
    assert [check(), check()] == [True, True]
    assert health.hits == 1  # the second answer came from the cache
    health.default = 500
    assert check()
    assert health.hits == 1  # still trusted within the TTL
    check.forget()
    assert not check()
    assert health.hits == 2
    monkeypatch.setattr(health_mod, "HEALTH_TTL_S", 0.0)
    health.default = 200
    assert [check(), check()] == [True, True]
    assert health.hits == 4  # TTL 0: every call asks


def test_every_provider_pool_and_worker_uses_the_shared_probe() -> None:
    """No module outside ``_health`` opens ``/health`` itself or keeps its own TTL."""
    import openenv.containers._base
    import openenv.containers._monarch
    import openenv.k8s._remote
    import openenv.resolve._connect
    import openenv.train._workers

    for module in (
        openenv.resolve._connect,
        openenv.containers._base,
        openenv.containers._monarch,
        openenv.k8s._remote,
        openenv.train._workers,
    ):
        source = inspect.getsource(module)
        assert "urlopen" not in source, module.__name__
        assert "HEALTH_TTL_S =" not in source, module.__name__
