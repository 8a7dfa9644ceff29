"""``openenv serve``: argument mapping in-process, real servers in child processes.

Child servers bind 127.0.0.1 only, every wait is bounded, and each child's whole
process group is terminated (then killed) at teardown.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
import pytest

from openenv import EnvClient
from openenv.cli import build_parser, main
from openenv.server import ServerSettings

from ._envs import MODELS, TAction
from .conftest import free_port

ROOT = Path(__file__).resolve().parents[1]


# --- in-process --------------------------------------------------------------------------------


def test_serve_arguments_map_to_settings(monkeypatch):
    import openenv.server

    seen: list[tuple[str, ServerSettings]] = []
    monkeypatch.setattr(openenv.server, "serve", lambda target, settings: seen.append((target, settings)))
    monkeypatch.delenv("OPENENV_PORT", raising=False)
    rc = main(["serve", "echo", "--host", "0.0.0.0", "--port", "9100", "--workers", "2",
               "--max-sessions", "7", "--idle-timeout", "4.5", "--log-level", "info"])
    assert rc == 0
    ((target, settings),) = seen
    assert target == "echo"
    assert (settings.host, settings.port, settings.workers) == ("0.0.0.0", 9100, 2)
    assert (settings.max_sessions, settings.idle_timeout_s, settings.log_level) == (7, 4.5, "info")


def test_unset_arguments_fall_back_to_variables_and_defaults(monkeypatch):
    import openenv.server

    seen: list[ServerSettings] = []
    monkeypatch.setattr(openenv.server, "serve", lambda target, settings: seen.append(settings))
    monkeypatch.setenv("OPENENV_MAX_SESSIONS", "11")
    monkeypatch.delenv("OPENENV_PORT", raising=False)
    assert main(["serve", "echo"]) == 0
    assert (seen[0].max_sessions, seen[0].port, seen[0].host) == (11, 8000, "127.0.0.1")


def test_unknown_env_exits_2_with_a_message(capsys):
    assert main(["serve", "definitely_not_an_env"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("openenv serve: no environment 'definitely_not_an_env'")
    assert "echo" in err  # lists what is installed


def test_folder_without_entry_point_exits_2(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert main(["serve", str(tmp_path)]) == 2
    assert "openenv serve:" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["serve"], ["serve", "echo", "--port", "x"], ["bogus"]])
def test_bad_command_lines_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_parser_defaults_are_none():
    args = build_parser().parse_args(["serve", "echo"])
    assert (args.host, args.port, args.workers, args.max_sessions, args.idle_timeout, args.log_level) == (
        None, None, None, None, None, None,
    )


# --- child processes ---------------------------------------------------------------------------


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


@contextmanager
def openenv_serve(*args: str, startup_s: float = 30.0) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", *args, "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"openenv serve exited with {proc.returncode}: {proc.stdout.read()}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("openenv serve did not become healthy in time")
            time.sleep(0.1)
        yield url, proc
    finally:
        stop(proc)


def test_unknown_env_in_a_child_process_exits_2():
    proc = subprocess.run(
        [sys.executable, "-m", "openenv", "serve", "nope_nope"], cwd=ROOT, env=child_env(),
        capture_output=True, text=True, timeout=30,
    )
    assert proc.returncode == 2
    assert "openenv serve: no environment 'nope_nope'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("target", ["echo", "envs/echo_env", "echo_env:EchoEnv"])
def test_serve_target_forms(target):
    with openenv_serve(target) as (url, proc):
        assert httpx.get(f"{url}/metadata", timeout=5).json()["name"] == "echo_env"
        with EnvClient(url) as env:
            env.reset()
            assert env.step({"message": "hey"}).observation["echoed_message"] == "hey"
    assert proc.returncode is not None


def test_sigterm_stops_the_server_gracefully():
    with openenv_serve("tests._envs:PidEnv", "--log-level", "info") as (url, proc):
        with EnvClient(url, MODELS) as env:
            assert env.reset().observation.pid == proc.pid  # one worker: served in-process
        os.killpg(proc.pid, signal.SIGTERM)
        # uvicorn shuts down (lifespan included), then re-raises the signal
        assert proc.wait(15) in (0, -signal.SIGTERM)
        log = proc.stdout.read()
    assert "Waiting for application shutdown" in log
    assert "Application shutdown complete" in log
    assert "Finished server process" in log


@pytest.mark.timeout(90)
def test_two_workers_both_serve_sessions():
    with openenv_serve("tests._envs:PidEnv", "--workers", "2", startup_s=60) as (url, proc):
        workers: set[int] = set()
        deadline = time.monotonic() + 30  # the second worker may still be starting
        clients = []
        try:
            while len(workers) < 2 and time.monotonic() < deadline:
                env = EnvClient(url, MODELS)
                clients.append(env)  # held open, so each connection is a new accept
                pid = env.reset().observation.pid
                assert env.step(TAction(message="x")).observation.pid == pid
                workers.add(pid)
        finally:
            for env in clients:
                env.close()
        children = {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
        assert len(workers) == 2, f"only worker(s) {workers} answered {len(clients)} connections"
        assert workers <= children
        assert proc.pid not in workers


@pytest.mark.timeout(90)
def test_two_workers_split_connections_evenly():
    """Each worker has its own SO_REUSEPORT socket, so a burst of connections is spread
    by the kernel, not taken by whichever worker wakes first."""
    with openenv_serve("tests._envs:PidEnv", "--workers", "2", startup_s=60) as (url, _):
        time.sleep(2.0)  # both workers listening
        clients = [EnvClient(url, MODELS) for _ in range(64)]
        try:
            pids = [env.reset().observation.pid for env in clients]
        finally:
            for env in clients:
                env.close()
    counts = sorted(pids.count(p) for p in set(pids))
    assert len(counts) == 2, f"connections per worker: {counts}"
    assert counts[0] >= 16, f"connections per worker: {counts}"


@pytest.mark.timeout(90)
def test_a_worker_that_dies_is_replaced():
    with openenv_serve("tests._envs:PidEnv", "--workers", "2", startup_s=60) as (url, proc):
        time.sleep(2.0)
        with EnvClient(url, MODELS) as env:
            victim = env.reset().observation.pid
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            children = {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
            if victim not in children and len(children) >= 2:  # the replacement is up
                break
            time.sleep(0.2)
        served = set()
        for _ in range(16):
            with EnvClient(url, MODELS) as env:
                served.add(env.reset().observation.pid)
        assert victim not in served
        assert served <= {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
