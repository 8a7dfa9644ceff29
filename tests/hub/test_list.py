"""``openenv.hub.list_envs`` and ``AutoEnv.list_hub_environments`` against the fake Hub
(``fake_hub.py``, a TEST DOUBLE: no Hub is reachable from here): the Spaces that
``openenv push`` tagged ``openenv``, filtered as asked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.authoring import init_env
from openenv.auto import AutoEnv
from openenv.hub import HubEnv, HubError, list_envs, push

from .fake_hub import FakeHub, FakeRepo


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeHub]:
    """Two envs pushed by ``push`` (one liked more), one plain Gradio Space, one private env."""
    server = FakeHub().start()
    root = tmp_path_factory.mktemp("envs")
    for repo_id, private in (("alice/maze", False), ("org/grid_world", False), ("alice/secret", True)):
        folder = init_env(repo_id.split("/")[1], root / repo_id.replace("/", "--"))
        push(folder, repo_id, private=private, token=server.token, endpoint=server.url)
    server.repos["org/grid_world"].likes = 7
    server.repos["bob/chat-demo"] = FakeRepo("bob/chat-demo", False, "gradio", {"README.md": b"# demo\n"})
    yield server
    server.stop()


def test_the_env_spaces_most_liked_first(hub: FakeHub) -> None:
    found = list_envs(endpoint=hub.url)
    assert [env.repo_id for env in found] == ["org/grid_world", "alice/maze"]  # not the Gradio one
    assert found[0].likes == 7
    assert "openenv" in found[0].tags
    assert found[0].url == "https://org-grid-world.hf.space"


def test_filters_and_limit(hub: FakeHub) -> None:
    assert [e.repo_id for e in list_envs(author="alice", endpoint=hub.url)] == ["alice/maze"]
    assert [e.repo_id for e in list_envs(search="grid", endpoint=hub.url)] == ["org/grid_world"]
    assert [e.repo_id for e in list_envs(limit=1, endpoint=hub.url)] == ["org/grid_world"]
    with pytest.raises(ValueError, match="limit must be at least 1"):
        list_envs(limit=0, endpoint=hub.url)


def test_a_token_shows_its_private_envs_too(hub: FakeHub) -> None:
    found = {e.repo_id for e in list_envs(endpoint=hub.url, token=hub.token)}
    assert found == {"org/grid_world", "alice/maze", "alice/secret"}


def test_auto_env_lists_them(hub: FakeHub, capsys: pytest.CaptureFixture[str]) -> None:
    found = AutoEnv.list_hub_environments(endpoint=hub.url)
    assert found == [HubEnv("org/grid_world", 7, found[0].tags), HubEnv("alice/maze", 0, found[1].tags)]
    printed = capsys.readouterr().out
    assert "org/grid_world" in printed
    assert "AutoEnv.from_hub('org/grid_world')" in printed
    assert "Total: 2 env Spaces" in printed


def test_an_unreachable_hub_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub retries a refused listing 5 times with back-off (23 s): its sleeps are
    skipped here, the retries and the error that ends them are its own."""
    import huggingface_hub.utils._http as hf_http

    monkeypatch.setattr(hf_http.time, "sleep", lambda _s: None)
    with pytest.raises(
        HubError, match=r"^listing Spaces tagged 'openenv' failed: cannot reach the Hub at"
    ) as caught:
        list_envs(endpoint="http://127.0.0.1:9")
    assert "\n" not in str(caught.value)
