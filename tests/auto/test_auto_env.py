"""``openenv.auto``: AutoEnv / AutoAction find an installed upstream-layout env package
by name and give its client and action class; the client drives a real server.

The package is ``tests/core/upstream_envs/counter_env`` (upstream's layout, unchanged),
installed for the test as the distribution ``openenv-counter_env`` (a ``.dist-info`` on
``sys.path``, which is what pip leaves). Installing from the Hub is not reachable here:
only the consent step (which runs before anything is fetched) is exercised.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv.auto import AutoAction, AutoEnv
from openenv.auto import _discovery as discovery_module
from openenv.resolve._install import installed_package
from tests.core.test_upstream_envs import HERE, _start


@pytest.fixture(autouse=True)
def counter_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``openenv-counter_env`` 0.1.0 installed; a fresh discovery with its own cache file."""
    site = tmp_path / "site"
    info = site / "openenv_counter_env-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: openenv-counter_env\nVersion: 0.1.0\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENENV_TRUST_REMOTE_CODE", raising=False)
    discovery_module.reset_discovery()
    yield tmp_path / "cache" / "openenv" / "discovery_cache.json"
    discovery_module.reset_discovery()


def test_the_installed_package_is_found_by_any_spelling_of_its_name() -> None:
    from counter_env import CounterAction, CounterEnv, CounterObservation

    for name in ("counter", "counter_env", "counter-env"):
        assert AutoAction.from_env(name) is CounterAction
        assert AutoAction.from_hub(name) is CounterAction
    assert AutoEnv.get_env_class("counter") is CounterEnv
    assert (
        discovery_module.get_discovery().get_environment("counter").get_observation_class()
        is CounterObservation
    )


def test_env_info_names_the_package_module_classes_and_image() -> None:
    info = AutoEnv.get_env_info("counter_env")
    assert info["env_key"] == "counter"
    assert info["package"] == "openenv-counter_env"
    assert info["version"] == "0.1.0"
    assert info["module"] == "counter_env.client"
    assert (info["env_class"], info["action_class"], info["observation_class"]) == (
        "CounterEnv",
        "CounterAction",
        "CounterObservation",
    )
    assert info["default_image"] == "counter-env:latest"
    assert info["spec_version"] == 1  # from the package's openenv.yaml
    action = AutoAction.get_action_info("counter")
    assert action["action_class"] == "CounterAction"
    assert action["package"] == "openenv-counter_env"


def test_the_client_from_auto_env_drives_an_episode_on_our_server(uvicorn_counter: str) -> None:
    from counter_env import CounterAction, CounterEnv

    client: Any = AutoEnv.from_env("counter", base_url=uvicorn_counter)
    assert isinstance(client, CounterEnv)
    with client.sync() as env:
        assert env.reset().observation.total == 0
        assert env.step(CounterAction(add=2)).observation.total == 2
        assert env.step(AutoAction.from_hub("counter")(add=3)).observation.total == 5
        assert env.state().step_count == 2


def test_a_server_that_does_not_answer_is_a_connection_error() -> None:
    with pytest.raises(ConnectionError, match="no env server answers"):
        AutoEnv.from_env("counter", base_url="http://unanswered.invalid:9")


def test_an_unknown_name_suggests_the_close_ones_and_lists_the_rest() -> None:
    with pytest.raises(ValueError, match="Unknown environment 'countr'") as caught:
        AutoAction.from_env("countr")
    assert "Did you mean: counter" in str(caught.value)
    assert "Available environments:" in str(caught.value)
    with pytest.raises(ValueError, match="Unknown environment 'nothing-like-it'"):
        AutoEnv.from_env("nothing-like-it")


def test_the_factories_are_not_instantiated() -> None:
    with pytest.raises(TypeError, match=r"AutoEnv.from_hub\(\)"):
        AutoEnv()
    with pytest.raises(TypeError, match=r"AutoAction.from_hub\(\)"):
        AutoAction()


def test_listings_print_each_env_and_the_count(capsys: pytest.CaptureFixture[str]) -> None:
    AutoEnv.list_environments()
    listed = capsys.readouterr().out
    assert "counter" in listed
    assert "openenv-counter_env" in listed
    AutoAction.list_actions()
    actions = capsys.readouterr().out
    assert "CounterAction" in actions
    count = len(discovery_module.get_discovery().discover())
    assert f"Total: {count} action classes" in actions


def test_discovery_is_cached_in_the_users_cache_file(counter_installed: Path) -> None:
    first = discovery_module.get_discovery().discover()
    assert counter_installed.is_file()
    discovery_module.reset_discovery()
    again = discovery_module.get_discovery()
    assert again._load_cache() is not None  # read back from the file, not scanned
    assert again.discover().keys() == first.keys()
    again.clear_cache()
    assert not counter_installed.exists()


def test_a_broken_client_module_is_an_import_error_naming_the_reinstall(tmp_path: Path) -> None:
    info = discovery_module.get_discovery().get_environment("counter")
    assert info is not None
    info.client_module_path = "counter_env.no_such_module"
    with pytest.raises(ImportError, match="pip install --force-reinstall openenv-counter_env"):
        AutoAction.from_env("counter")


def test_a_space_is_not_installed_without_consent(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[Any] = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(
        "openenv.auto.auto_env.AutoEnv._check_space_availability", classmethod(lambda cls, url: False)
    )
    with pytest.raises(ValueError, match="Installation cancelled"):
        AutoEnv.from_hub("someone/unknown-env")  # stdin is not a terminal: no one to ask
    assert ran == []
    assert AutoEnv._resolve_space_url("someone/unknown_env") == "https://someone-unknown-env.hf.space"
    assert (
        AutoEnv._get_hub_git_url("someone/unknown-env")
        == "git+https://huggingface.co/spaces/someone/unknown-env"
    )


@pytest.mark.parametrize("consent", [False, True])
def test_an_absent_image_is_pulled_only_with_consent(monkeypatch: pytest.MonkeyPatch, consent: bool) -> None:
    """Issue 34: AutoEnv ran an env's image that was not here, and so pulled it from a
    registry, without the caller's consent. The pull is recorded, never made."""
    docker = pytest.importorskip("docker")
    from openenv._exceptions import ProviderError

    try:
        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as exc:
        pytest.skip(f"needs a Docker engine to ask for the image: {type(exc).__name__}")
    pulls: list[str] = []

    def pull(self: Any, repository: str, *args: Any, **kwargs: Any) -> None:
        pulls.append(repository)

    monkeypatch.setattr(docker.models.images.ImageCollection, "pull", pull)
    monkeypatch.delenv("OPENENV_TRUST_REMOTE_CODE", raising=False)
    image = "openenv-absent-h6-test:never"
    with pytest.raises(ProviderError) as info:
        AutoEnv.from_env("echo", docker_image=image, trust_remote_code=consent)
    if consent:
        assert pulls == [image]  # asked for, then not found: the provider's own error
    else:
        assert pulls == []
        assert "consent" in str(info.value)
        assert image in str(info.value)


def test_what_pip_and_uv_report_installed_names_the_env_package() -> None:
    pip = "Successfully installed fastapi-0.115.0 openenv-wordle_env-0.1.0 uvicorn-0.30.1"
    assert installed_package(pip) == "openenv-wordle_env"
    uv = "Resolved 3 packages\n + openenv-wordle-env==0.1.0\n + uvicorn==0.30.1"
    assert installed_package(uv) == "openenv-wordle-env"
    assert installed_package("Requirement already satisfied: httpx") is None


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:8000", True),
        ("http://127.0.0.1:8000", True),
        ("http://0.0.0.0:8000", True),
        ("http://[::1]:8000", True),
        ("https://someone-env.hf.space", False),
        ("http://localhost.example.com", False),
    ],
)
def test_local_urls(url: str, local: bool) -> None:
    assert AutoEnv._is_local_url(url) is local


@pytest.fixture(scope="module")
def echo_server() -> Iterator[str]:
    root = Path(__file__).resolve().parents[2]
    cmd = [
        sys.executable,
        "-m",
        "openenv",
        "serve",
        str(root / "envs" / "echo_env"),
        "--host",
        "127.0.0.1",
        "--port",
        "PORT",
    ]
    yield from _start(cmd)


def test_an_env_of_ours_gets_a_client_made_from_its_models(echo_server: str) -> None:
    from echo_env import EchoAction, EchoObservation, EchoState

    assert AutoAction.from_env("echo") is EchoAction
    client_cls = AutoEnv.get_env_class("echo")
    assert client_cls.__name__ == "EchoEnv"
    with AutoEnv.from_env("echo", base_url=echo_server).sync() as env:
        env.reset()
        result = env.step(EchoAction(message="hello"))
        assert isinstance(result.observation, EchoObservation)
        assert (result.observation.echoed_message, result.observation.message_length) == ("hello", 5)
        assert result.reward == pytest.approx(0.5)
        state = env.state()
        assert isinstance(state, EchoState)
        assert (state.step_count, state.total_chars) == (1, 5)


def test_upstreams_module_level_names_are_the_ones_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """``openenv.auto`` is a name layer over ``openenv.resolve``; upstream's users patch its
    module-level names (``auto_env.get_discovery``, ``_confirm_remote_install``,
    ``_get_pip_command``/``_has_uv``, ``auto_action.get_discovery``,
    ``_discovery._load_manifest_from_package``), so the classes ask those, at call time."""
    from openenv.auto import auto_action, auto_env
    from openenv.core import GenericAction, GenericEnvClient

    monkeypatch.setattr(
        discovery_module,
        "_load_manifest_from_package",
        lambda package, module: {"name": "tally"} if module == "counter_env" else None,
    )
    assert "tally" in discovery_module.get_discovery().discover(use_cache=False)
    asked: list[str] = []
    found = discovery_module.get_discovery()
    monkeypatch.setattr(auto_env, "get_discovery", lambda: asked.append("env") or found)
    monkeypatch.setattr(auto_action, "get_discovery", lambda: asked.append("action") or found)
    assert AutoEnv.get_env_info("tally")["package"] == "openenv-counter_env"
    assert AutoAction.get_action_info("tally")["package"] == "openenv-counter_env"
    assert asked == ["env", "action"]

    ran: list[list[str]] = []
    monkeypatch.setattr(
        subprocess,
        "run",
        lambda command, **k: ran.append(command) or subprocess.CompletedProcess(command, 0, "", ""),
    )
    monkeypatch.setattr(auto_env, "_has_uv", lambda: True)
    monkeypatch.setattr(auto_env, "_confirm_remote_install", lambda repo_id: False)
    with pytest.raises(ValueError, match="Installation cancelled"):
        AutoEnv._install_from_hub("someone/tally")
    monkeypatch.setattr(auto_env, "_confirm_remote_install", lambda repo_id: True)
    assert AutoEnv._install_from_hub("someone/tally") == "openenv-tally_env"
    assert ran == [["uv", "pip", "install", "git+https://huggingface.co/spaces/someone/tally"]]
    assert AutoAction.from_hub("anything", skip_install=True) is GenericAction
    assert AutoEnv._generic_client() is GenericEnvClient
