"""``openenv push`` against the fake Hub (``fake_hub.py``, a TEST DOUBLE: no Hub is
reachable from here): the files and README front-matter that arrive."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from openenv.authoring import init_env
from openenv.hub import HubError, PushResult, push

from .fake_hub import FakeHub

SPACE_FILES = [
    "Dockerfile",
    "README.md",
    "openenv.yaml",
    "pyproject.toml",
    "tests/test_maze_env.py",
    "wheels/openenv-0.1.0-py3-none-any.whl",
    "wheels/openenv_maze-0.1.0-py3-none-any.whl",
    "maze/__init__.py",
    "maze/env.py",
    "maze/models.py",
]


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    server = FakeHub().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def env_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = init_env("maze", tmp_path_factory.mktemp("push"))
    (folder / "notes.log").write_text("local only")
    (folder / ".openenvignore").write_text("# comment\n*.log\n")
    return folder


@pytest.fixture(scope="module")
def pushed(hub: FakeHub, env_dir: Path) -> list[str]:
    """``openenv push --private`` with the token from ``HF_TOKEN``: the files it printed."""
    env = {**os.environ, "HF_TOKEN": hub.token, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_TELEMETRY": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "openenv", "push", str(env_dir), "--repo-id", "alice/maze", "--private"],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"pushed 10 files to {hub.url}/spaces/alice/maze (commit ")
    return [line.strip() for line in lines[1:]]


def front_matter(readme: bytes) -> dict:
    text = readme.decode()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_push_uploads_the_staged_space(hub: FakeHub, pushed: list[str]):
    repo = hub.repos["alice/maze"]
    assert sorted(repo.files) == sorted(SPACE_FILES) == pushed
    assert (repo.private, repo.sdk) == (True, "docker")
    methods = [c for c in hub.calls if c[1].startswith("/api/")]
    assert methods[:2] == [("GET", "/api/whoami-v2"), ("POST", "/api/repos/create")]
    assert methods[-1] == ("POST", "/api/spaces/alice/maze/commit/main")


def test_front_matter_and_dockerfile(hub: FakeHub, pushed: list[str]):
    files = hub.repos["alice/maze"].files
    meta = front_matter(files["README.md"])
    assert meta["sdk"] == "docker"
    assert meta["app_port"] == 8000
    assert meta["base_path"] == "/web"
    assert meta["tags"] == ["openenv"]
    assert meta["title"] == "maze"
    assert "# Maze env" in files["README.md"].decode()
    dockerfile = files["Dockerfile"].decode()
    assert dockerfile.splitlines()[-1] == 'CMD ["openenv", "serve", "maze"]'
    # by path: an index's same-named "openenv" (upstream's, a higher version) cannot win
    assert ('"/tmp/wheels/openenv-0.1.0-py3-none-any.whl[server]" '
            '"/tmp/wheels/openenv_maze-0.1.0-py3-none-any.whl"') in dockerfile
    assert files["openenv.yaml"].startswith(b"spec_version: 1\nname: maze\n")


def test_dry_run_lists_exactly_what_push_uploads_and_contacts_nobody(hub: FakeHub, env_dir: Path,
                                                                      pushed: list[str]):
    before = len(hub.calls)
    result = push(env_dir, "alice/maze", dry_run=True, endpoint=hub.url, token="unused")
    assert result.dry_run
    assert result.files == pushed
    assert len(hub.calls) == before


def test_second_push_reuses_the_space(hub: FakeHub, env_dir: Path, pushed: list[str]):
    (env_dir / "maze" / "extra.py").write_text("X = 1\n")
    try:
        again = push(env_dir, "alice/maze", token=hub.token, endpoint=hub.url)
    finally:
        (env_dir / "maze" / "extra.py").unlink()
    assert isinstance(again, PushResult)
    assert again.url == f"{hub.url}/spaces/alice/maze"
    assert again.commit == hub.repos["alice/maze"].sha
    assert "maze/extra.py" in again.files
    assert hub.repos["alice/maze"].files["maze/extra.py"] == b"X = 1\n"
    assert len(hub.repos["alice/maze"].commits) == 2


def test_author_front_matter_is_kept_and_completed(tmp_path: Path, hub: FakeHub):
    folder = init_env("cards", tmp_path)
    body = (folder / "README.md").read_text()
    (folder / "README.md").write_text("---\ntitle: My Cards\nsdk: gradio\ntags: [games]\n---\n" + body)
    push(folder, "alice/cards", token=hub.token, endpoint=hub.url)
    meta = front_matter(hub.repos["alice/cards"].files["README.md"])
    assert meta["title"] == "My Cards"
    assert meta["sdk"] == "docker"
    assert meta["tags"] == ["games", "openenv"]


def test_bad_token_and_no_token(hub: FakeHub, env_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                tmp_path: Path):
    with pytest.raises(HubError, match="authentication"):
        push(env_dir, "alice/maze", token="hf_wrong", endpoint=hub.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # no saved login either
    with pytest.raises(HubError, match="no Hugging Face token"):
        push(env_dir, "alice/maze", endpoint=hub.url)


@pytest.mark.parametrize("repo_id", ["maze", "a/b/c", "alice/../x", "/maze", "alice/maze\n", "alice/ma\nze"])
def test_bad_repo_ids(env_dir: Path, repo_id: str):
    with pytest.raises(HubError, match="not a Hub repo id"):
        push(env_dir, repo_id, dry_run=True)


def test_the_wheel_is_built_here_only_when_this_setuptools_can(monkeypatch: pytest.MonkeyPatch):
    """A fresh venv of Python 3.11 has setuptools 65 and no ``wheel``: it cannot build a
    wheel without build isolation (issue 28: `invalid command 'bdist_wheel'`)."""
    import importlib.metadata
    import importlib.util

    from openenv.hub import _stage

    versions = {"setuptools": "84.2.1"}

    def version(name: str) -> str:
        if name not in versions:
            raise importlib.metadata.PackageNotFoundError(name)
        return versions[name]

    wheel: list[object] = []  # find_spec("wheel"): none, then one
    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: wheel[0] if wheel and name == "wheel" else None
    )
    assert _stage._builds_here(["setuptools>=68"])
    assert not _stage._builds_here(["setuptools>=999"])
    versions["setuptools"] = "65.5.0"
    assert not _stage._builds_here(["setuptools>=40.8.0"])  # no bdist_wheel of its own
    wheel.append(object())
    assert _stage._builds_here(["setuptools>=40.8.0"])  # with the wheel package, it can
    versions.clear()
    assert not _stage._builds_here(["setuptools>=68"])  # not installed: pip fetches it
