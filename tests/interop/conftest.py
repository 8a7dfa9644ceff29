"""Fixtures for the interop tests: upstream OpenEnv 0.10.0 against ours, both ways.

Upstream's package is also called ``openenv``, so upstream code never runs in this
process: it runs as ``.venv-upstream/bin/python tests/interop/upstream_side/<script>``
(see ``UPSTREAM_FRAMES.md``). Our server runs as ``python -m openenv serve
envs/echo_env`` (the real CLI) in a subprocess.

Skips happen in exactly two cases, both with the reason in the message:

* ``.venv-upstream/bin/python`` does not exist (``scripts/test.sh`` creates it);
* an upstream script exits with ``EXIT_NO_UPSTREAM`` (5): its ``_upstream_guard``
  could not import upstream's ``openenv.core``. The import is done by the script
  we need anyway (it is the 6-10 s part), so the check costs nothing extra.

Any other failure of an upstream script fails the test, with its stderr.

Test modules reach the helpers through the ``interop`` fixture (this folder is not a
package, so they cannot import this file by a stable name).

Costs: upstream's import takes 6-10 s per process, so there is ONE upstream server
for the whole run (session scope, ``--max-sessions 2``), ONE ``drive.py`` call per
module (``--plan``), and our servers are module scoped. Everything binds
127.0.0.1, every wait is bounded, and every process is stopped by its PID.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from openenv._exceptions import StartupFailed
from tests._served import LoopbackUrls, wait_served

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
UPSTREAM_SIDE = HERE / "upstream_side"
#: Upstream's interpreter; ``OPENENV_UPSTREAM_PYTHON`` points elsewhere (another venv).
UPSTREAM_PY = Path(os.environ.get("OPENENV_UPSTREAM_PYTHON") or REPO / ".venv-upstream" / "bin" / "python")
ECHO_ENV_DIR = REPO / "envs" / "echo_env"

#: ``_upstream_guard.EXIT_NO_UPSTREAM``: upstream ``openenv.core`` cannot be imported.
EXIT_NO_UPSTREAM = 5
#: Per-test limit; a module's first test also pays for its module fixtures.
TEST_TIMEOUT_S = 180
#: Upstream servers share this many session slots (the capacity tests fill them).
UPSTREAM_MAX_SESSIONS = 2

_no_upstream_reason: str | None = None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            Path(str(item.path)).resolve().relative_to(HERE)
        except ValueError:
            continue
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_S))


# --- skipping -----------------------------------------------------------------------------


def require_upstream() -> Path:
    """The upstream interpreter, or a skip saying why there is none."""
    if _no_upstream_reason is not None:
        pytest.skip(_no_upstream_reason)
    if not (UPSTREAM_PY.is_file() and os.access(UPSTREAM_PY, os.X_OK)):
        pytest.skip(
            f"upstream OpenEnv is not installed: {_shown(UPSTREAM_PY)} is missing "
            "(scripts/test.sh creates it with `pip install openenv==0.10.0`)"
        )
    return UPSTREAM_PY


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def _skip_no_upstream(stderr: str) -> None:
    global _no_upstream_reason
    lines = [ln for ln in stderr.splitlines() if "cannot import upstream" in ln]
    detail = lines[-1].split("openenv.core: ", 1)[-1] if lines else stderr.strip()[-400:]
    _no_upstream_reason = f"{_shown(UPSTREAM_PY)} cannot import upstream openenv.core: {detail}"
    pytest.skip(_no_upstream_reason)


@pytest.fixture(scope="session")
def upstream_python() -> Path:
    return require_upstream()


# --- processes ------------------------------------------------------------------------------


def _stop(proc: subprocess.Popen[Any], grace_s: float = 8.0) -> None:
    """SIGTERM by PID, then SIGKILL by PID; always reaped."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _upstream_env() -> dict[str, str]:
    # Never let our checkout reach upstream's interpreter through PYTHONPATH.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_upstream_script(script: str, args: list[str], timeout_s: float = 150.0) -> dict[str, Any]:
    """Run ``upstream_side/<script>`` and return the ONE JSON line it prints.

    Exit status 5 (no upstream) skips; a missing/garbled line or a timeout fails.
    The returned dict also carries ``_rc`` and ``_stderr``.
    """
    python = require_upstream()
    cmd = [str(python), str(UPSTREAM_SIDE / script), *args]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, cwd=tempfile.gettempdir(),
            env=_upstream_env(), check=False,
        )
    except subprocess.TimeoutExpired as exc:  # run() kills the child on timeout
        pytest.fail(f"{script} ran past {timeout_s} s; stderr tail:\n{(exc.stderr or '')[-3000:]}")
    if proc.returncode == EXIT_NO_UPSTREAM:
        _skip_no_upstream(proc.stderr)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        pytest.fail(f"{script} printed no JSON (rc={proc.returncode}); stderr:\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(lines[-1])
    out["_rc"] = proc.returncode
    out["_stderr"] = proc.stderr[-3000:]
    return out


def http(method: str, url: str, body: bytes | None = None, timeout_s: float = 10.0) -> tuple[int, bytes]:
    """One HTTP request; returns (status, raw body) for any status."""
    headers = {"content-type": "application/json"} if body is not None else {}
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class UpstreamServer(LoopbackUrls):
    """Upstream's ``create_app`` + uvicorn serving the echo env (``serve_echo.py``)."""

    def __init__(self, max_sessions: int = UPSTREAM_MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self.port = 0
        self.info: dict[str, Any] = {}
        self._dir = Path(tempfile.mkdtemp(prefix="interop-upstream-"))
        self._out = self._dir / "stdout"
        self._err = self._dir / "stderr"
        self.proc: subprocess.Popen[Any] | None = None

    def start(self, timeout_s: float = 90.0) -> UpstreamServer:
        python = require_upstream()
        cmd = [
            str(python), str(UPSTREAM_SIDE / "serve_echo.py"), "--port", "0",
            "--max-sessions", str(self.max_sessions), "--max-seconds", "600",
        ]
        with self._out.open("w") as out, self._err.open("w") as err:
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                cwd=tempfile.gettempdir(), env=_upstream_env(),
            )
        deadline = time.monotonic() + timeout_s
        while True:
            for line in _tail(self._out, 100_000).splitlines():
                if line.startswith("{") and '"listening"' in line:
                    self.info = json.loads(line)
                    self.port = int(self.info["port"])
                    return self
            rc = self.proc.poll()
            if rc is not None:
                if rc == EXIT_NO_UPSTREAM:
                    _skip_no_upstream(_tail(self._err))
                pytest.fail(f"serve_echo.py exited {rc} before listening; stderr:\n{_tail(self._err)}")
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"serve_echo.py not listening after {timeout_s} s; stderr:\n{_tail(self._err)}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)

    def stderr(self) -> str:
        return _tail(self._err)


class OurServer(LoopbackUrls):
    """Our echo env served by our CLI: ``python -m openenv serve envs/echo_env``."""

    def __init__(self, max_sessions: int | None = None) -> None:
        self.max_sessions = max_sessions
        self.port = 0
        self._dir = Path(tempfile.mkdtemp(prefix="interop-ours-"))
        self._log = self._dir / "log"
        self.proc: subprocess.Popen[Any] | None = None

    def launch(self) -> OurServer:
        """Start the process (returns at once; ``wait_ready`` waits for /health)."""
        self.port = _free_port()
        cmd = [
            sys.executable, "-m", "openenv", "serve", str(ECHO_ENV_DIR),
            "--host", "127.0.0.1", "--port", str(self.port),
        ]
        if self.max_sessions is not None:
            cmd += ["--max-sessions", str(self.max_sessions)]
        env = dict(os.environ)
        env.update(OPENENV_IDLE_TIMEOUT_S="0", OPENENV_LOG_LEVEL="warning")
        with self._log.open("w") as log:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO, env=env,
            )
        return self

    def wait_ready(self, timeout_s: float = 30.0) -> OurServer:
        assert self.proc is not None
        try:
            wait_served(self.url, self.proc, timeout_s, "openenv serve", log=self._log)
        except StartupFailed:
            self.stop()
            raise
        return self

    def active_sessions(self) -> int:
        status, body = http("GET", f"{self.url}/sessions")
        assert status == 200, body
        return int(json.loads(body)["active_sessions"])

    def wait_sessions(self, n: int, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.active_sessions() != n:
            if time.monotonic() > deadline:
                pytest.fail(f"our server has {self.active_sessions()} active sessions, expected {n}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)


def start_ours(*servers: OurServer) -> tuple[OurServer, ...]:
    """Launch several of our servers in parallel, then wait for each."""
    for s in servers:
        s.launch()
    try:
        for s in servers:
            s.wait_ready()
    except BaseException:
        for s in servers:
            s.stop()
        raise
    return servers


@pytest.fixture(scope="session")
def upstream_server(upstream_python: Path) -> Iterator[UpstreamServer]:
    """ONE upstream server for the whole run (``--max-sessions 2``).

    Tests leave no session open behind them (the capacity tests wait for their
    slots to be freed), so modules can share it.
    """
    server = UpstreamServer(UPSTREAM_MAX_SESSIONS)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def wait_upstream_slots_free(server: UpstreamServer, timeout_s: float = 10.0) -> None:
    """Wait until ``server.max_sessions`` plain sockets can be held at once.

    Upstream has no session-count route; a socket at capacity gets an unsolicited
    CAPACITY_REACHED frame right after accept, so hold all slots, then end each with
    upstream's ``close`` message. Upstream destroys the session before it closes the
    socket, so a socket's close also says that its slot is free again: no frame arriving
    in a window (a loaded host can outlast it) is taken as an answer.
    """
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    deadline = time.monotonic() + timeout_s
    while True:
        full = False
        with contextlib.ExitStack() as stack:
            held = [
                stack.enter_context(connect(server.ws_url, open_timeout=10, close_timeout=10))
                for _ in range(server.max_sessions)
            ]
            for ws in held:
                with contextlib.suppress(ConnectionClosed):
                    ws.send('{"type": "close"}')
                try:
                    for _ in range(10):  # bounded: a refused socket's error frame, then the close
                        full |= '"CAPACITY_REACHED"' in str(ws.recv(timeout=30))
                    pytest.fail("upstream answered frames to a close message")
                except ConnectionClosed:
                    pass  # closed by the server: this socket's session (if any) is destroyed
        if not full:
            return
        if time.monotonic() > deadline:
            pytest.fail("upstream server still at capacity after the test released its sessions")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def interop() -> SimpleNamespace:
    """The helpers of this file, for test modules."""
    return SimpleNamespace(
        OurServer=OurServer,
        UpstreamServer=UpstreamServer,
        start_ours=start_ours,
        run_upstream_script=run_upstream_script,
        http=http,
        wait_upstream_slots_free=wait_upstream_slots_free,
        UPSTREAM_MAX_SESSIONS=UPSTREAM_MAX_SESSIONS,
    )
