"""The env of a run named as the other commands name one, beyond a folder and a URL
(tests/eval/test_run.py) and an image (tests/eval/test_image.py): an installed env's
name, and a Hub id, looked up on the fake Hub (a TEST DOUBLE: the real Hub cannot be
reached) whose live Space is a local echo server standing in for ``*.hf.space``; a
private Space gets the token, as ``from_hub`` sends it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.eval import EvalConfig, load_trajectories, run_eval

from ..hub.fake_hub import FakeHub, FakeRepo

pytest.importorskip("huggingface_hub", reason="the 'hub' extra brings huggingface_hub")


def test_an_installed_env_by_its_name(tmp_path: Path) -> None:
    results = run_eval(EvalConfig(env="echo", policy="null", out=tmp_path, count=2))
    assert (results["env"], results["episodes"], results["errors"]) == ("echo_env", 2, 0)


@pytest.fixture
def space(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeHub, list[str | None]]]:
    """The fake Hub with the private Space ``alice/echo``, live at a local echo server
    that keeps each request's Authorization header."""
    from echo_env import EchoEnv
    from huggingface_hub import constants

    from openenv.server import create_app, serve_in_background

    seen: list[str | None] = []
    app = create_app(EchoEnv)

    async def keep_auth(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]).get(b"authorization", b"").decode() or None)
        await app(scope, receive, send)

    hub = FakeHub().start()
    hub.repos["alice/echo"] = FakeRepo("alice/echo", private=True, sdk="docker", commits=["c" * 40])
    try:
        with serve_in_background(keep_auth) as live:
            monkeypatch.setattr(constants, "ENDPOINT", hub.url)
            monkeypatch.setattr("openenv.hub._from_hub.space_url", lambda repo_id: live.url)
            monkeypatch.setenv("HF_TOKEN", hub.token)
            yield hub, seen
    finally:
        hub.stop()


def test_a_hub_id_plays_its_live_space(tmp_path: Path, space: tuple[FakeHub, list[str | None]]) -> None:
    hub, seen = space
    results = run_eval(EvalConfig(env="alice/echo", policy="null", out=tmp_path, count=2))
    assert (results["env"], results["episodes"], results["errors"]) == ("echo_env", 2, 0)
    assert ("GET", "/api/spaces/alice/echo") in hub.calls
    assert seen
    assert set(seen) == {f"Bearer {hub.token}"}  # a private Space: every request carried the token
    assert {t.task_id for t in load_trajectories(tmp_path)} == {"seed-0", "seed-1"}
