"""One env at a time (upstream's provider shapes, ours in ``openenv.containers``):
``ProviderHandle`` starts and stops each kind exactly once; ``UVProvider``'s command line."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from openenv._exceptions import ProviderError
from openenv.containers import (
    ContainerProvider,
    LocalProcessProvider,
    ProcessReplica,
    ProviderHandle,
    RuntimeProvider,
    UVProvider,
)

REPO = Path(__file__).resolve().parents[2]
ECHO = str(REPO / "envs" / "echo_env")


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def test_handle_over_our_provider_stops_its_replica_once() -> None:
    handle = ProviderHandle(LocalProcessProvider(ECHO))
    url = handle.start()
    replica = handle._replica
    assert isinstance(replica, ProcessReplica)
    assert _healthy(url)
    handle.stop()
    handle.stop()  # a second stop is a no-op
    assert not replica.alive()


class _Runtime(RuntimeProvider):
    """An upstream-style runtime provider: a URL from ``start``, then ``wait_for_ready``."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.replica: ProcessReplica | None = None

    def start(self, port: int | None = None, env_vars: dict[str, str] | None = None, **kwargs: Any) -> str:
        self.calls.append("start")
        self.replica = LocalProcessProvider(ECHO).start()
        return self.replica.base_url

    def wait_for_ready(self, timeout_s: float = 30.0) -> None:
        self.calls.append("wait_for_ready")

    def stop(self) -> None:
        self.calls.append("stop")
        assert self.replica is not None
        self.replica.stop()


def test_handle_over_a_runtime_provider_waits_and_stops_it() -> None:
    runtime = _Runtime()
    handle = ProviderHandle(runtime)
    url = handle.start()
    assert _healthy(url)
    handle.stop()
    handle.stop()
    assert runtime.calls == ["start", "wait_for_ready", "stop"]


class _NeedsImage(ContainerProvider):
    def start_container(
        self, image: str, port: int | None = None, env_vars: dict[str, str] | None = None, **kwargs: Any
    ) -> str:
        raise AssertionError("not called: the handle has no image to give")

    def stop_container(self) -> None:
        raise AssertionError("never started")

    def wait_for_ready(self, base_url: str, timeout_s: float = 30.0) -> None:
        raise AssertionError("never started")


def test_a_container_provider_that_needs_its_image_is_refused_by_name() -> None:
    handle = ProviderHandle(_NeedsImage())
    with pytest.raises(ValueError, match=r"start_container\(\) needs image"):
        handle.start()
    handle.stop()  # nothing started, nothing stopped


def test_handle_refuses_what_is_no_provider() -> None:
    with pytest.raises(TypeError, match="start_container"):
        ProviderHandle(object()).start()


def test_uv_provider_needs_uv_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ProviderError, match="needs `uv` on PATH"):
        UVProvider("some/project")


def test_uv_provider_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: f"/bin/{name}")
    provider = UVProvider("proj", app="server.app:app", reload=True)
    assert provider.command(8123, workers=2) == [
        "uv", "run", "--isolated", "--project", "proj", "--",
        "uvicorn", "server.app:app", "--host", "127.0.0.1", "--port", "8123", "--workers", "2", "--reload",
    ]  # fmt: skip
    with pytest.raises(RuntimeError, match="not started"):
        provider.wait_for_ready()
