"""Envs in upstream's layout (tests/core/upstream_envs), unchanged, on our server.

Each is served the ways upstream's users serve them (``python -m uvicorn
PKG.server.app:app``, ``openenv serve DIR``, ``create_app`` in process) and driven by
its own upstream-style client; upstream's own client (0.10.0, in ``.venv-upstream``)
drives one too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

from .._served import stop_child, wait_served

HERE = Path(__file__).parent / "upstream_envs"
REPO = Path(__file__).resolve().parents[2]
UPSTREAM_PY = REPO / ".venv-upstream" / "bin" / "python"


@pytest.fixture(autouse=True)
def _envs_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def _uvicorn(app: str, python: str = sys.executable) -> list[str]:
    return [python, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", "PORT"]


def _start(cmd: list[str], path: list[Path] | None = None) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (path or [HERE, REPO]))}
    args = [a.replace("PORT", str(port)) for a in cmd]
    proc = subprocess.Popen(args, env=env, cwd=str(HERE), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_served(url, proc)
        yield url
    finally:
        stop_child(proc)


@pytest.fixture(scope="module")
def uvicorn_counter() -> Iterator[str]:
    yield from _start(_uvicorn("counter_env.server.app:app"))


@pytest.fixture(scope="module")
def upstream_counter() -> Iterator[str]:
    """The same folder served by upstream OpenEnv 0.10.0 (its package only on the path)."""
    if not UPSTREAM_PY.is_file():
        pytest.skip(f"upstream OpenEnv 0.10.0 is not installed at {UPSTREAM_PY} (scripts/test.sh makes it)")
    yield from _start(_uvicorn("counter_env.server.app:app", str(UPSTREAM_PY)), path=[HERE])


@pytest.fixture(scope="module")
def serve_dir_counter() -> Iterator[str]:
    serve = [sys.executable, "-m", "openenv", "serve", str(HERE / "counter_env")]
    yield from _start([*serve, "--host", "127.0.0.1", "--port", "PORT"])


@pytest.fixture(scope="module")
def uvicorn_tools() -> Iterator[str]:
    pytest.importorskip(
        "fastmcp", reason="fastmcp is what upstream MCP envs define tools with (scripts/setup.d)"
    )
    yield from _start(_uvicorn("tools_env.server.app:app"))


def _episode(url: str) -> None:
    from counter_env import CounterAction, CounterEnv

    with CounterEnv(base_url=url).sync() as env:
        first = env.reset()
        assert first.observation.total == 0
        assert not first.done
        result = env.step(CounterAction(add=4))
        assert result.observation.total == 4
        assert result.reward == 4.0
        assert not result.done
        result = env.step(CounterAction(add=6))
        assert result.done
        assert result.observation.total == 10
        state = env.state()
        assert state.step_count == 2
        assert state.total == 10


def test_uvicorn_serves_the_app_module_unchanged(uvicorn_counter: str) -> None:
    _episode(uvicorn_counter)


def test_openenv_serve_serves_the_env_folder(serve_dir_counter: str) -> None:
    _episode(serve_dir_counter)


def test_reset_keywords_reach_the_env_and_the_schema_is_upstreams(uvicorn_counter: str) -> None:
    reply = httpx.post(uvicorn_counter + "/reset", json={"start": 7}, timeout=10).json()
    assert reply["observation"]["total"] == 7
    assert reply["done"] is False
    schema = httpx.get(uvicorn_counter + "/schema", timeout=10).json()
    assert set(schema) >= {"action", "observation", "state"}
    assert "add" in schema["action"]["properties"]


def test_a_bad_action_is_a_typed_error_and_the_session_goes_on(uvicorn_counter: str) -> None:
    from counter_env import CounterAction, CounterEnv

    from openenv import OpenEnvError

    with CounterEnv(base_url=uvicorn_counter).sync() as env:
        env.reset()
        with pytest.raises(OpenEnvError):
            env.step(CounterAction.model_construct(add="not a number"))  # skips validation here
        assert env.step(CounterAction(add=1)).observation.total == 1


def test_concurrent_sessions_are_isolated(uvicorn_counter: str) -> None:
    from counter_env import CounterAction, CounterEnv

    with CounterEnv(base_url=uvicorn_counter).sync() as a, CounterEnv(base_url=uvicorn_counter).sync() as b:
        a.reset()
        b.reset()
        a.step(CounterAction(add=3))
        assert b.step(CounterAction(add=1)).observation.total == 1
        assert a.state().total == 3


def test_mcp_tools_by_name_over_the_websocket(uvicorn_tools: str) -> None:
    from tools_env import ToolsEnv

    with ToolsEnv(base_url=uvicorn_tools).sync() as env:
        env.reset()
        names = sorted(t.name for t in env.list_tools())
        assert names == ["add", "shout"]
        assert env.call_tool("add", a=2, b=3) == 5
        assert env.call_tool("shout", text="hi") == "HI"


def test_mcp_tools_over_http_json_rpc(uvicorn_tools: str) -> None:
    listed = httpx.post(
        uvicorn_tools + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10
    )
    assert sorted(t["name"] for t in listed.json()["result"]["tools"]) == ["add", "shout"]
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
    }
    reply = httpx.post(uvicorn_tools + "/mcp", json=call, timeout=10).json()
    assert reply["id"] == 2
    assert reply["result"]["data"] == 3
    missing = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}
    error = httpx.post(uvicorn_tools + "/mcp", json=missing, timeout=10).json()["error"]
    assert error["data"]["error_type"] == "tool_not_found"


def test_create_app_rejects_an_instance_and_unsafe_concurrency() -> None:
    from counter_env.models import CounterAction, CounterObservation
    from counter_env.server.counter_environment import CounterEnvironment

    from openenv.core.env_server import ConcurrencyConfigurationError, Environment, State, create_app

    with pytest.raises(TypeError, match="not an instance"):
        create_app(CounterEnvironment(), CounterAction, CounterObservation)  # type: ignore[arg-type]

    class OneAtATime(Environment):  # type: ignore[type-arg]
        def reset(self, seed=None, episode_id=None, **kw):  # type: ignore[no-untyped-def]
            return CounterObservation()

        def step(self, action, timeout_s=None, **kw):  # type: ignore[no-untyped-def]
            return CounterObservation()

        @property
        def state(self) -> State:
            return State()

    with pytest.raises(ConcurrencyConfigurationError):
        create_app(OneAtATime, CounterAction, CounterObservation, max_concurrent_envs=4)


def test_upstreams_own_client_drives_the_env_on_our_server(uvicorn_counter: str) -> None:
    if not UPSTREAM_PY.is_file():
        pytest.skip(f"upstream OpenEnv 0.10.0 is not installed at {UPSTREAM_PY} (scripts/test.sh makes it)")
    script = textwrap.dedent(
        """
        import sys
        from openenv.core.generic_client import GenericEnvClient
        with GenericEnvClient(base_url=sys.argv[1]).sync() as env:
            env.reset()
            r = env.step({"add": 10})
            print(r.observation["total"], r.done, env.state()["step_count"])
        """
    )
    out = subprocess.run(
        [str(UPSTREAM_PY), "-c", script, uvicorn_counter],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["10", "True", "1"]


def test_our_clients_drive_the_env_on_upstreams_server(upstream_counter: str) -> None:
    from openenv import EnvClient

    _episode(upstream_counter)  # its upstream-style client, over our openenv.core
    with EnvClient(upstream_counter) as env:  # our generic client
        env.reset()
        result = env.step({"add": 10})
        assert (result.observation["total"], result.done) == (10, True)
        assert env.state()["step_count"] == 1
