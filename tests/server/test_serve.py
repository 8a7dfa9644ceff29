"""``openenv.server._serve`` and ``create_app``: targets, uvicorn options, worker start-up."""

from __future__ import annotations

import os
import socket
import sys
import textwrap

import pytest
from starlette.applications import Starlette

from openenv.server import ServerSettings, create_app
from openenv.server import _serve as serve_mod
from openenv.server import serve as serve_env
from openenv.server._serve import (
    ENTRY_POINT_GROUP,
    EnvNotFound,
    _listen,
    load_env_class,
    resolve_target,
    uvicorn_options,
)

from .._envs import PidEnv, make_env

ECHO_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "envs", "echo_env")


# --- uvicorn options -----------------------------------------------------------------------------


def test_uvicorn_options_pass_pings_frame_limit_and_stack():
    s = ServerSettings(host="0.0.0.0", port=1234, max_frame_bytes=4096, ping_interval_s=3.0,
                       ping_timeout_s=4.0, log_level="error")
    opts = uvicorn_options(s)
    assert (opts["host"], opts["port"]) == ("0.0.0.0", 1234)
    assert opts["ws_max_size"] == 4096
    assert opts["ws_ping_interval"] == 3.0
    assert opts["ws_ping_timeout"] == 4.0
    from openenv.server._direct import DirectWebSocketsProtocol

    # uvicorn's sans-I/O protocol, with the direct channel to the /ws loop (_direct.py)
    assert issubclass(opts["ws"], DirectWebSocketsProtocol)
    assert opts["ws_per_message_deflate"] is False
    assert opts["lifespan"] == "on"
    assert opts["access_log"] is False
    assert opts["log_level"] == "error"
    assert opts["loop"] == "uvloop"  # installed in the dev venv
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert issubclass(opts["http"], HttpToolsProtocol)  # with header deadlines, a cap per client (_guard.py)


def test_zero_ping_settings_disable_keepalive():
    opts = uvicorn_options(ServerSettings(ping_interval_s=0, ping_timeout_s=0))
    assert opts["ws_ping_interval"] is None
    assert opts["ws_ping_timeout"] is None


def test_uvicorn_accepts_the_options():
    import uvicorn

    config = uvicorn.Config(create_app(make_env()), **uvicorn_options(ServerSettings(ping_interval_s=2)))
    assert config.ws_ping_interval == 2
    assert config.ws_max_size == 16 * 1024 * 1024
    assert not config.ws_per_message_deflate


def test_uvicorn_falls_back_without_uvloop_and_httptools(monkeypatch):
    real = serve_mod.importlib.util.find_spec
    monkeypatch.setattr(serve_mod.importlib.util, "find_spec",
                        lambda name: None if name in ("uvloop", "httptools") else real(name))
    opts = uvicorn_options(ServerSettings())
    from uvicorn.protocols.http.h11_impl import H11Protocol

    assert opts["loop"] == "asyncio"
    assert issubclass(opts["http"], H11Protocol)


# --- targets ---------------------------------------------------------------------------------------


def test_module_class_target_is_used_as_is():
    assert resolve_target("tests._envs:PidEnv") == ("tests._envs:PidEnv", None)


def test_installed_name_target_uses_the_entry_point():
    assert resolve_target("echo") == ("echo_env:EchoEnv", None)


def test_folder_target_reads_its_pyproject():
    spec, path = resolve_target(ECHO_DIR)
    assert spec == "echo_env:EchoEnv"
    assert path == os.path.realpath(ECHO_DIR)


def test_unknown_name_lists_the_installed_envs():
    with pytest.raises(EnvNotFound, match=r"no environment 'nope'.*echo"):
        resolve_target("nope")


def test_folder_without_pyproject(tmp_path):
    with pytest.raises(EnvNotFound, match=r"without pyproject\.toml"):
        resolve_target(str(tmp_path))


def test_folder_without_entry_point(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(EnvNotFound, match=ENTRY_POINT_GROUP):
        resolve_target(str(tmp_path))


@pytest.fixture
def uninstalled_env(tmp_path, monkeypatch):
    """A folder with an env package that is not installed (nor on sys.path)."""
    pkg = "openenv_test_folder_env"
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text(textwrap.dedent("""
        from openenv import Environment, Observation, State, Action

        class FolderEnv(Environment[Action, Observation, State]):
            def reset(self, **kw): return Observation()
            def step(self, action): return Observation()
            def state(self): return State()

        NOT_AN_ENV = 1
    """))
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(f"""
        [project]
        name = "folder-env"
        [project.entry-points."openenv.envs"]
        folder = "{pkg}:FolderEnv"
    """))
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path, pkg
    for name in [m for m in sys.modules if m.startswith(pkg)]:
        del sys.modules[name]


def test_folder_target_imports_from_the_folder(uninstalled_env):
    folder, pkg = uninstalled_env
    spec, path = resolve_target(str(folder))
    assert spec == f"{pkg}:FolderEnv"
    cls = load_env_class(spec, path)
    assert cls.__name__ == "FolderEnv"
    assert sys.path[-1] == str(folder.resolve())  # appended: after the installed packages


def test_folder_named_like_its_package_served_from_its_parent(uninstalled_env, monkeypatch):
    # `openenv serve guess` from guess/'s parent: the folder itself is importable as a
    # namespace package "guess", which must not hide the real package inside it.
    folder, pkg = uninstalled_env
    named = folder.parent / pkg
    folder.rename(named)
    monkeypatch.chdir(named.parent)
    monkeypatch.syspath_prepend(str(named.parent))
    spec, path = resolve_target(pkg)
    assert load_env_class(spec, path).__name__ == "FolderEnv"


def test_load_env_class_rejects_non_envs(uninstalled_env):
    folder, pkg = uninstalled_env
    with pytest.raises(EnvNotFound, match="not an Environment"):
        load_env_class(f"{pkg}:NOT_AN_ENV", str(folder))


def test_load_env_class_names_a_missing_module_or_class():
    with pytest.raises(EnvNotFound, match="no module named 'no_such_module_xyz'"):
        load_env_class("no_such_module_xyz:Env")
    with pytest.raises(EnvNotFound, match=r"module 'tests\._envs' has no attribute 'Missing'"):
        load_env_class("tests._envs:Missing")
    with pytest.raises(EnvNotFound, match="is not module:Class"):
        load_env_class("tests._envs:")


def test_load_env_class_keeps_an_envs_own_import_error(tmp_path, monkeypatch):
    """A module the env itself imports and lacks is a real error: the traceback stays."""
    (tmp_path / "env_with_bad_import_xyz.py").write_text("import not_installed_dep_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="not_installed_dep_xyz"):
        load_env_class("env_with_bad_import_xyz:Env")


def test_load_env_class_resolves_dotted_attributes():
    assert load_env_class("tests._envs:PidEnv") is PidEnv


def test_worker_sockets_share_one_port_with_reuseport():
    first = _listen("127.0.0.1", 0)
    port = first.getsockname()[1]
    second = _listen("127.0.0.1", port)  # would fail without SO_REUSEPORT
    try:
        assert second.getsockname()[1] == port
        assert second.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
    finally:
        first.close()
        second.close()


# --- serve() -----------------------------------------------------------------------------------------


@pytest.fixture
def fake_uvicorn(monkeypatch):
    import uvicorn

    from openenv import _uvicorn_server

    calls: list[tuple[tuple, dict]] = []

    class FakeServer:
        def __init__(self, config: tuple[tuple, dict]) -> None:
            self.config = config

        def run(self) -> None:
            calls.append(self.config)

        async def startup(self, sockets: object = None) -> None:  # wrapped to print the URL
            raise AssertionError("run() is faked: startup is never reached")

    monkeypatch.setattr(uvicorn, "Config", lambda *a, **kw: (a, kw))
    monkeypatch.setattr(uvicorn, "Server", FakeServer)
    monkeypatch.setattr(_uvicorn_server, "PromptServer", FakeServer)  # what serve() runs
    monkeypatch.setattr(os, "environ", os.environ.copy())
    return calls


def test_serve_one_worker_runs_the_app_in_process(fake_uvicorn):
    serve_env("tests._envs:PidEnv", ServerSettings(port=1234, ping_interval_s=5))
    ((args, kwargs),) = fake_uvicorn
    assert isinstance(args[0], Starlette)
    assert args[0].state.sessions.runner.env_class is PidEnv
    assert kwargs["port"] == 1234
    assert kwargs["ws_ping_interval"] == 5
    assert "workers" not in kwargs


def test_serve_accepts_a_class(fake_uvicorn):
    serve_env(PidEnv, ServerSettings())
    assert fake_uvicorn[0][0][0].state.sessions.runner.env_class is PidEnv


@pytest.fixture
def fake_supervisor(monkeypatch):
    calls: list[tuple[str, str | None, ServerSettings]] = []
    monkeypatch.setattr(serve_mod, "_supervise", lambda *args: calls.append(args))
    return calls


def test_serve_many_workers_hands_the_resolved_target_to_the_supervisor(fake_uvicorn, fake_supervisor):
    serve_env(ECHO_DIR, ServerSettings(workers=3, max_sessions=9))
    ((spec, path, settings),) = fake_supervisor
    assert (spec, path) == ("echo_env:EchoEnv", os.path.realpath(ECHO_DIR))
    assert (settings.workers, settings.max_sessions) == (3, 9)
    assert fake_uvicorn == []  # workers run their own uvicorn.Server


def test_serve_many_workers_with_a_class(fake_uvicorn, fake_supervisor):
    serve_env(PidEnv, ServerSettings(workers=2))
    assert fake_supervisor[0][:2] == ("tests._envs:PidEnv", None)


def test_serve_unknown_target_raises_before_starting(fake_uvicorn):
    with pytest.raises(EnvNotFound):
        serve_env("nope", ServerSettings())
    assert fake_uvicorn == []


# --- create_app --------------------------------------------------------------------------------------


def test_create_app_rejects_an_instance():
    with pytest.raises(TypeError, match="not an instance"):
        create_app(PidEnv())  # type: ignore[arg-type]


def test_create_app_rejects_a_non_env_class():
    with pytest.raises(TypeError, match="not an Environment"):
        create_app(dict)  # type: ignore[arg-type]


def test_create_app_factory_needs_env_class():
    with pytest.raises(TypeError, match="env_class"):
        create_app(lambda: PidEnv())


def test_create_app_exposes_manager_and_settings():
    settings = ServerSettings(max_sessions=5)
    app = create_app(PidEnv, settings=settings)
    assert app.state.settings is settings
    assert app.state.sessions.max_sessions == 5


def test_create_app_reads_settings_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENENV_MAX_SESSIONS", "6")
    assert create_app(PidEnv).state.settings.max_sessions == 6


def test_factory_is_called_once_per_session(serve):
    env = make_env()
    built: list[int] = []

    def factory():
        built.append(1)
        return env()

    server = serve(env, factory=factory)
    import httpx

    for _ in range(3):
        assert httpx.post(f"{server.url}/reset", json={}, timeout=5).status_code == 200
    assert len(built) == 3
