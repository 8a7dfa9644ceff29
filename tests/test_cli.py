"""``openenv serve``: argument mapping in-process, real servers in child processes.

Child servers bind 127.0.0.1 only, every wait is bounded, and each child's whole
process group is terminated (then killed) at teardown.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
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
from openenv._exceptions import ConnectError
from openenv.cli import build_parser, main
from openenv.server import ServerSettings

from ._envs import MODELS, TAction
from ._served import wait_served
from .conftest import free_port, wait_until

ROOT = Path(__file__).resolve().parents[1]


# --- in-process --------------------------------------------------------------------------------


def test_serve_arguments_map_to_settings(monkeypatch):
    import openenv.server

    seen: list[tuple[str, ServerSettings]] = []
    monkeypatch.setattr(openenv.server, "serve", lambda t, settings, **_: seen.append((t, settings)))
    monkeypatch.delenv("OPENENV_PORT", raising=False)
    rc = main(["serve", "echo", "--host", "0.0.0.0", "--port", "9100", "--workers", "2",
               "--max-sessions", "7", "--idle-timeout", "4.5", "--log-level", "info"])
    assert rc == 0
    ((target, settings),) = seen
    assert target == "echo"
    assert (settings.host, settings.port, settings.workers) == ("0.0.0.0", 9100, 2)
    assert (settings.max_sessions, settings.idle_timeout_s, settings.log_level) == (7, 4.5, "info")


def test_serve_admission_options_map_to_settings(monkeypatch):
    import openenv.server

    seen: list[ServerSettings] = []
    monkeypatch.setattr(openenv.server, "serve", lambda target, settings, **_: seen.append(settings))
    monkeypatch.delenv("OPENENV_AUTH_TOKEN", raising=False)
    assert main(["serve", "echo", "--auth-token", "t0k", "--max-sessions-per-client", "4"]) == 0
    assert (seen[0].auth_token, seen[0].max_sessions_per_client) == ("t0k", 4)
    monkeypatch.setenv("OPENENV_AUTH_TOKEN", "from-env")
    assert main(["serve", "echo"]) == 0
    assert (seen[1].auth_token, seen[1].max_sessions_per_client) == ("from-env", -1)
    assert main(["serve", "echo", "--allowed-origins", "http://localhost:3000",
                 "--allowed-hosts", "env.example", "--forwarded-allow-ips", "10.0.0.1"]) == 0
    assert (seen[2].allowed_origins, seen[2].allowed_hosts, seen[2].forwarded_allow_ips) == (
        "http://localhost:3000", "env.example", "10.0.0.1")


def test_unset_arguments_fall_back_to_variables_and_defaults(monkeypatch):
    import openenv.server

    seen: list[ServerSettings] = []
    monkeypatch.setattr(openenv.server, "serve", lambda target, settings, **_: seen.append(settings))
    monkeypatch.setenv("OPENENV_MAX_SESSIONS", "11")
    monkeypatch.delenv("OPENENV_PORT", raising=False)
    assert main(["serve", "echo"]) == 0
    assert (seen[0].max_sessions, seen[0].port, seen[0].host) == (11, 8000, "127.0.0.1")


def test_sandbox_is_passed_as_an_env_argument_not_through_the_environment(monkeypatch):
    import openenv.server

    seen: list[ServerSettings] = []
    monkeypatch.setattr(openenv.server, "serve", lambda target, settings, **_: seen.append(settings))
    monkeypatch.delenv("OPENENV_SANDBOX", raising=False)
    monkeypatch.setenv("OPENENV_ENV_KWARGS", '{"tasks_dir": "/t"}')
    assert main(["serve", "terminal", "--sandbox", "strict"]) == 0
    assert seen[0].env_kwargs == {"tasks_dir": "/t", "sandbox": "strict"}
    assert "OPENENV_SANDBOX" not in os.environ  # no switch left behind for the process
    argv = ["serve", "terminal", "--env-kwargs", '{"sandbox": "auto", "x": 1}', "--sandbox", "none"]
    assert main(argv) == 0
    assert seen[1].env_kwargs == {"sandbox": "none", "x": 1}
    assert main(["serve", "terminal"]) == 0
    assert seen[2].env_kwargs == {"tasks_dir": "/t"}  # without --sandbox the env's own default stands


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
        wait_served(url, proc, startup_s, "openenv serve")
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
        # uvicorn shuts down (lifespan included); a clean stop is status 0, not -15
        assert proc.wait(15) == 0
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


def _listening_workers(pid: int, port: int) -> int:
    """How many child processes of ``pid`` hold a listening socket on ``port``."""
    count = 0
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            conns = child.net_connections("tcp")
            count += any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in conns)
    return count


@pytest.mark.timeout(90)
def test_two_workers_split_connections_evenly():
    """Each worker has its own SO_REUSEPORT socket, so a burst of connections is spread
    by the kernel, not taken by whichever worker wakes first."""
    with openenv_serve("tests._envs:PidEnv", "--workers", "2", startup_s=60) as (url, proc):
        port = int(url.rsplit(":", 1)[1])
        both = lambda: _listening_workers(proc.pid, port) == 2  # noqa: E731
        wait_until(both, timeout_s=60, what="both workers listening")
        clients = [EnvClient(url, MODELS) for _ in range(64)]
        try:
            pids = [env.reset().observation.pid for env in clients]
        finally:
            for env in clients:
                env.close()
    counts = sorted(pids.count(p) for p in set(pids))
    assert len(counts) == 2, f"connections per worker: {counts}"
    assert counts[0] >= 16, f"connections per worker: {counts}"


def worker_pids(supervisor: int) -> set[int]:
    """The supervisor's worker processes (not multiprocessing's resource tracker)."""
    pids = set()
    for child in psutil.Process(supervisor).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "resource_tracker" not in " ".join(child.cmdline()):
                pids.add(child.pid)
    return pids


@pytest.mark.timeout(90)
def test_a_worker_that_dies_is_replaced():
    with openenv_serve("tests._envs:PidEnv", "--workers", "2", startup_s=60) as (url, proc):
        def workers_without(pid: int) -> set[int] | None:
            pids = worker_pids(proc.pid)
            return pids if len(pids) == 2 and pid not in pids else None

        before = wait_until(lambda: workers_without(-1), 30, what="two workers")
        with EnvClient(url, MODELS) as env:
            victim = env.reset().observation.pid
        assert victim in before
        os.kill(victim, signal.SIGKILL)
        after = wait_until(lambda: workers_without(victim), 30, what=f"a replacement for worker {victim}")
        (replacement,) = after - before
        served: set[int] = set()
        deadline = time.monotonic() + 30  # the replacement may still be importing
        while replacement not in served and time.monotonic() < deadline:
            try:
                with EnvClient(url, MODELS) as env:
                    served.add(env.reset().observation.pid)
            except ConnectError:  # a connection that raced the restart; the next one is routed anew
                time.sleep(0.1)
        assert replacement in served, f"only {served} answered"
        assert victim not in served


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_taken_port_fails_fast_with_one_line(workers):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "openenv", "serve", "echo", "--workers", workers,
             "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=30,
        )
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"openenv serve: cannot listen on 127.0.0.1:{port}: Address already in use"


@pytest.mark.parametrize(
    ("target", "line"),
    [
        ("tests._envs:Missing",
         "module 'tests._envs' has no attribute 'Missing' (from 'tests._envs:Missing')"),
        ("missing_module_xyz:X", "no module named 'missing_module_xyz' (from 'missing_module_xyz:X')"),
        ("tests.nope_xyz:X", "no module named 'tests.nope_xyz' (from 'tests.nope_xyz:X')"),
        ("tests._envs", "no environment 'tests._envs'"),
    ],
)
def test_a_bad_target_prints_one_line(target, line):
    proc = subprocess.run([sys.executable, "-m", "openenv", "serve", target], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"openenv serve: {line}")
    assert len(proc.stderr.strip().splitlines()) == 1


# --- missing extras: the optional module is hidden by a meta-path blocker ---------------------

_BLOCKER = """
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
from openenv.cli import main
sys.exit(main({argv!r}))
"""


@pytest.mark.parametrize(
    ("blocked", "argv", "line"),
    [
        ({"starlette"}, ["serve", "echo"],
         "openenv serve: openenv serve needs the 'server' extra (missing module 'starlette'): "
         "pip install 'openenv[server]'"),
        ({"uvicorn"}, ["serve", "echo"],
         "openenv serve: openenv serve needs the 'server' extra (missing module 'uvicorn'): "
         "pip install 'openenv[server]'"),
        ({"docker"}, ["run", "some-image"],
         "openenv run: running env containers needs the 'docker' extra (missing module 'docker'): "
         "pip install 'openenv[docker]'"),
        ({"docker"}, ["gc"],
         "openenv gc: running env containers needs the 'docker' extra (missing module 'docker'): "
         "pip install 'openenv[docker]'"),
        ({"docker"}, ["ps"],
         "openenv ps: running env containers needs the 'docker' extra (missing module 'docker'): "
         "pip install 'openenv[docker]'"),
        ({"docker"}, ["stop", "some-container"],
         "openenv stop: running env containers needs the 'docker' extra (missing module 'docker'): "
         "pip install 'openenv[docker]'"),
        ({"docker"}, ["build", "envs/echo_env"],
         "openenv build: running env containers needs the 'docker' extra (missing module 'docker'): "
         "pip install 'openenv[docker]'"),
        # push reads openenv.yaml with the hub extra's pyyaml: it names hub, not authoring (issue 28)
        ({"yaml"}, ["push", "envs/echo_env", "--repo-id", "alice/echo", "--dry-run"],
         "openenv push: openenv push needs the 'hub' extra (missing module 'yaml'): "
         "pip install 'openenv[hub]'"),
        ({"huggingface_hub"}, ["pull", "alice/echo"],
         "openenv pull: openenv pull needs the 'hub' extra (missing module 'huggingface_hub'): "
         "pip install 'openenv[hub]'"),
        ({"mcp"}, ["mcp", "echo"],
         "openenv mcp: openenv mcp needs the 'mcp' extra (missing module 'mcp'): pip install 'openenv[mcp]'"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(blocked, argv, line):
    code = _BLOCKER.format(blocked=blocked, argv=argv)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=30)
    assert proc.stderr.strip() == line
    assert proc.returncode == 2


# --- openenv build: error paths (no engine needed) -------------------------------------------


def _build(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "openenv", "build", *args], cwd=ROOT,
                          env={**child_env(), **env}, capture_output=True, text=True, timeout=60)


def test_build_of_a_missing_folder_says_so(tmp_path):
    proc = _build(str(tmp_path / "nope"))
    assert (proc.returncode, proc.stdout) == (2, "")  # bad input: exit 2, as every command
    assert proc.stderr.strip() == f"openenv build: no env folder '{tmp_path / 'nope'}'"


def test_build_of_a_folder_without_dockerfile_says_so(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    proc = _build(str(tmp_path))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.strip() == (
        f"openenv build: {tmp_path} has no Dockerfile (copy envs/echo_env/Dockerfile)"
    )


def test_build_with_the_engine_down_says_so(tmp_path):
    proc = _build("envs/echo_env", DOCKER_HOST=f"unix://{tmp_path}/no-docker.sock")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.startswith("openenv build: no Docker engine answers (")
    assert proc.stderr.strip().endswith("is dockerd running?")
    assert "Traceback" not in proc.stderr


# --- start-up: the URL, and targets in the current directory (issue 20) ----------------------

_GUESS_MODULE = """
from openenv import Action, Environment, Observation, State

class A(Action):
    n: int = 0

class HereEnv(Environment[A, Observation, State]):
    def reset(self, *, seed=None, episode_id=None, options=None):
        self._s = State(episode_id=episode_id)
        return Observation()

    def step(self, action):
        return Observation(reward=float(action.n), done=True)

    def state(self):
        return self._s
"""


@contextmanager
def _console_script_serving_here(folder: Path) -> Iterator[int]:
    """``openenv serve here_mod:HereEnv`` by the console script, run from ``folder`` (no
    ``OPENENV_*`` variables, no ``PYTHONPATH``); yields the port once its first line names
    it (bounded: the test's timeout, or EOF if it exits); stopped after."""
    (folder / "here_mod.py").write_text(_GUESS_MODULE)
    script = Path(sys.executable).with_name("openenv")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_") and k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [str(script), "serve", "here_mod:HereEnv", "--port", str(port)], cwd=folder, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first == f"openenv: serving HereEnv on http://127.0.0.1:{port} (Ctrl-C stops it)"
        yield port
    finally:
        stop(proc)


def test_the_console_script_serves_a_module_of_the_current_directory_and_prints_its_url(tmp_path):
    """`openenv serve here_mod:HereEnv` from the module's folder: the console script's
    sys.path has no current directory unless the CLI adds it; the URL is the first line."""
    with _console_script_serving_here(tmp_path) as port, EnvClient(f"http://127.0.0.1:{port}") as client:
        client.reset()
        assert client.step({"n": 2}).reward == 2.0


def test_serve_prints_the_port_it_bound_when_asked_for_port_0(tmp_path):
    (tmp_path / "here_mod.py").write_text(_GUESS_MODULE)
    env = {**child_env(), "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", "here_mod:HereEnv", "--port", "0"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("openenv: serving HereEnv on http://127.0.0.1:")
        url = first.split(" on ")[1].split()[0]
        assert not url.endswith(":0")
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
    finally:
        stop(proc)


def test_a_module_of_the_current_directory_never_shadows_an_installed_one(tmp_path):
    """Issue 34: the CLI put the current directory first on sys.path, so a `uvicorn.py`
    there ran in place of uvicorn. Now it goes after the installed packages: the target
    module is still found there, and the folder's uvicorn.py is never imported."""
    (tmp_path / "uvicorn.py").write_text("raise SystemExit('the folder uvicorn.py ran')\n")
    with _console_script_serving_here(tmp_path):
        pass  # its first line came: the installed uvicorn ran, not the folder's
