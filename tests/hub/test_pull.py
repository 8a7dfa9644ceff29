"""``openenv pull`` from the fake Hub (a TEST DOUBLE): files arrive, nothing runs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.hub import HubError, pull

from .fake_hub import FakeHub, FakeRepo


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    server = FakeHub().start()
    server.repos["alice/secret"] = FakeRepo("alice/secret", private=True, sdk="docker", commits=["a" * 40],
                                            files={"README.md": b"# secret\n", "pkg/x.py": b"X = 1\n"})
    server.repos["org/open"] = FakeRepo("org/open", private=False, sdk="docker", commits=["b" * 40],
                                        files={"Dockerfile": b"FROM scratch\n"})
    yield server
    server.stop()


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".cache" not in p.parts}


def test_pull_private_space_with_token(hub: FakeHub, tmp_path: Path):
    path = pull("alice/secret", tmp_path / "s", token=hub.token, endpoint=hub.url)
    assert files_under(path) == {"README.md": b"# secret\n", "pkg/x.py": b"X = 1\n"}


def test_private_space_without_token_is_not_found(hub: FakeHub, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    with pytest.raises(HubError, match="downloading alice/secret failed"):
        pull("alice/secret", tmp_path / "s", endpoint=hub.url)


def test_cli_pull_public_space(hub: FakeHub, tmp_path: Path):
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_TOKEN", None)
    out = subprocess.run([sys.executable, "-m", "openenv", "pull", "org/open", "--dir", str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "o")
    assert "nothing was installed or run" in out.stderr
    assert files_under(tmp_path / "o") == {"Dockerfile": b"FROM scratch\n"}
