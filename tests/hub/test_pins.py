"""``owner/name@revision`` pins where a Hub id is taken: ``pull``, ``openenv pull``,
``resolve_hub_target`` (``from_hub``) and ``AutoEnv``. Against the fake Hub (a TEST
DOUBLE; the real Hub is unreachable here) that keeps every commit's files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.hub import HubError, pull, resolve_hub_target
from openenv.hub._pin import split_pin

from .fake_hub import FakeHub, FakeRepo

OLD, NEW = "1" * 40, "2" * 40


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    server = FakeHub().start()
    server.repos["org/env"] = FakeRepo(
        "org/env", private=False, sdk="docker", commits=[OLD, NEW],
        files={"app.py": b"V = 2\n"},
        snapshots={OLD: {"app.py": b"V = 1\n"}, NEW: {"app.py": b"V = 2\n"}},
    )
    yield server
    server.stop()


def test_split_pin():
    assert split_pin("org/env") == ("org/env", None)
    assert split_pin("org/env@v1") == ("org/env", "v1")
    assert split_pin("org/env", "main") == ("org/env", "main")
    assert split_pin("org/env@refs/pr/1") == ("org/env", "refs/pr/1")
    assert split_pin("org/env@v1", "v1") == ("org/env", "v1")


@pytest.mark.parametrize("bad", ["org/env@", "org/env@-x", "org/env@a..b", "org/env@a b"])
def test_a_malformed_pin_is_refused(bad):
    with pytest.raises(HubError, match="is not a revision"):
        split_pin(bad)


def test_a_pin_and_a_different_revision_argument_conflict():
    with pytest.raises(HubError, match="pins revision 'v1' but revision='v2'"):
        split_pin("org/env@v1", "v2")


def test_pull_a_pinned_commit_gets_that_commits_files(hub: FakeHub, tmp_path: Path):
    old = pull(f"org/env@{OLD}", tmp_path / "old", endpoint=hub.url)
    assert (old / "app.py").read_bytes() == b"V = 1\n"
    new = pull("org/env", tmp_path / "new", endpoint=hub.url)
    assert (new / "app.py").read_bytes() == b"V = 2\n"
    # the pin reached the Hub as the revision asked for
    assert ("GET", f"/api/spaces/org/env/tree/{OLD}") in hub.calls


def test_pull_a_revision_that_does_not_exist_is_one_line(hub: FakeHub, tmp_path: Path):
    with pytest.raises(HubError) as caught:
        pull("org/env@" + "9" * 40, tmp_path / "x", endpoint=hub.url)
    message = str(caught.value)
    assert "\n" not in message
    assert "no such revision" in message
    assert not (tmp_path / "x" / "app.py").exists()


def _cli_pull(hub: FakeHub, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "openenv", "pull", *args], capture_output=True,
                          text=True, timeout=60, env=env, cwd=cwd)


def test_cli_pull_pinned(hub: FakeHub, tmp_path: Path):
    done = _cli_pull(hub, tmp_path, f"org/env@{OLD}", "--dir", str(tmp_path / "o"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "o" / "app.py").read_bytes() == b"V = 1\n"


def test_cli_pull_unknown_revision_is_one_line(hub: FakeHub, tmp_path: Path):
    done = _cli_pull(hub, tmp_path, "org/env@nope", "--dir", str(tmp_path / "o"))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("openenv pull: ")
    assert "no such revision" in done.stderr


def test_cli_pull_malformed_pin_is_one_line(hub: FakeHub, tmp_path: Path):
    done = _cli_pull(hub, tmp_path, "org/env@")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "is not a revision" in done.stderr


def test_from_hub_live_space_at_its_head_pin(hub: FakeHub):
    target = resolve_hub_target(f"org/env@{NEW}", endpoint=hub.url, url="http://127.0.0.1:1")
    assert target.url == "http://127.0.0.1:1"
    assert ("GET", f"/api/spaces/org/env/revision/{NEW}") in hub.calls


def test_from_hub_live_space_pinned_to_an_older_commit_is_refused(hub: FakeHub):
    with pytest.raises(HubError, match=f"org/env@{OLD} is commit {OLD} but the live Space runs {NEW}"):
        resolve_hub_target(f"org/env@{OLD}", endpoint=hub.url)


def test_from_hub_unknown_revision_is_one_line(hub: FakeHub):
    with pytest.raises(HubError) as caught:
        resolve_hub_target("org/env", revision="nope", endpoint=hub.url)
    assert "\n" not in str(caught.value)
    assert "no such revision" in str(caught.value)


# --- AutoEnv -------------------------------------------------------------------------


@pytest.fixture
def hub_endpoint(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    """``AutoEnv`` takes no endpoint: the Hub's default endpoint points at the fake."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return hub


def test_auto_env_unknown_revision_is_one_line_before_any_install(hub_endpoint, monkeypatch):
    from openenv.auto import AutoEnv

    ran: list[object] = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    with pytest.raises(HubError) as caught:
        AutoEnv.from_hub("org/env@nope", trust_remote_code=True)
    assert "\n" not in str(caught.value)
    assert "no such revision" in str(caught.value)
    assert ran == []  # nothing was installed


def test_auto_env_pinned_off_the_live_head_is_refused(hub_endpoint, monkeypatch):
    from openenv.auto import AutoEnv

    ran: list[object] = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    with pytest.raises(HubError, match="the live Space runs"):
        AutoEnv.from_hub(f"org/env@{OLD}", trust_remote_code=True)
    assert ran == []


def test_auto_env_installs_the_pinned_revision(hub_endpoint, monkeypatch):
    from openenv.auto import AutoEnv, auto_env

    commands: list[list[str]] = []

    def fake_pip(command, **kwargs):  # TEST DOUBLE of pip: records, then fails as pip would
        commands.append(command)
        raise subprocess.CalledProcessError(1, command, "", "Collecting x\n  error: stop here\n")

    monkeypatch.setattr(subprocess, "run", fake_pip)
    monkeypatch.setattr(auto_env.AutoEnv, "_check_space_availability", classmethod(lambda cls, url: False))
    with pytest.raises(ValueError, match=r"error: stop here$") as caught:
        AutoEnv.from_hub(f"org/env@{NEW}", trust_remote_code=True)
    assert "\n" not in str(caught.value)
    assert commands[0][-1] == f"git+https://huggingface.co/spaces/org/env@{NEW}"
    assert AutoEnv._resolve_space_url(f"org/env@{NEW}") == "https://org-env.hf.space"
