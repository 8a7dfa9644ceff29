"""Shared helpers for the coding env tests (imported by plain name)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from coding_env import CodeAction, CodeObservation
from coding_env._runtime import CodingRuntime, CodingSettings
from coding_env.env import CodingEnv

from openenv.sandbox import SandboxConfig, SandboxLevel, resolve_isolation
from openenv.sandbox._bwrap import bwrap_works

ENV_DIR = Path(__file__).resolve().parents[1]
PROBLEMS = ENV_DIR / "coding_env" / "data" / "problems.jsonl"

#: Short limits so timeouts and kills are quick to test.
FAST = {"cell_timeout_s": 1.0, "grace_s": 0.5, "pool_size": 2, "memory_mb": 512, "nproc": 64,
        "output_limit": 1024}


def bwrap_reason() -> str:
    """Why the bubblewrap level cannot be tested here ("" when it can)."""
    uid = 190_000 if os.geteuid() == 0 else None
    return bwrap_works(uid)


#: Sandbox levels to run the containment tests at: "auto" (bubblewrap here) and "none".
LEVELS = [
    pytest.param(
        "auto",
        id="bwrap",
        marks=pytest.mark.skipif(bool(bwrap_reason()), reason=f"no bubblewrap: {bwrap_reason()}"),
    ),
    pytest.param("none", id="rlimits"),
]


@contextlib.contextmanager
def runtime(level: str = "auto", **overrides: object) -> Iterator[CodingRuntime]:
    settings = CodingSettings.from_kwargs(**{**FAST, "sandbox": level, **overrides})
    rt = CodingRuntime(settings).start()
    try:
        rt.pool.wait_full(30)
        yield rt
    finally:
        rt.close()


def level_isolation(level: str) -> str:
    return resolve_isolation(SandboxConfig(level=SandboxLevel(level))).value


def new_env(rt: CodingRuntime, task_id: str = "two_sum") -> CodingEnv:
    env = CodingEnv(resources=rt)
    env.reset(options={"task_id": task_id})
    return env


def run(env: CodingEnv, code: str) -> CodeObservation:
    return env.step(CodeAction(code=code))


def value(env: CodingEnv, expr: str) -> str | None:
    obs = run(env, expr)
    assert obs.exception is None, obs.exception
    return obs.result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(level: str = "auto", **env_kwargs: object) -> Iterator[str]:
    """``openenv serve coding`` in a child process on 127.0.0.1; yields its URL."""
    with server_process(level, **env_kwargs) as (_, url):
        yield url


@contextlib.contextmanager
def server_process(
    level: str = "auto", **env_kwargs: object
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``openenv serve coding`` in a child process on 127.0.0.1; yields it and its URL.
    Stopped with SIGTERM (SIGKILL after 15 s) unless the test stopped it."""
    import httpx
    import orjson

    port = free_port()
    kwargs = orjson.dumps({**FAST, "sandbox": level, **env_kwargs}).decode()
    env = {**os.environ, "OPENENV_ENV_KWARGS": kwargs}
    cmd = [sys.executable, "-m", "openenv", "serve", "coding", "--host", "127.0.0.1", "--port", str(port)]
    # The log goes to a file: a pipe nobody reads would stop the server once full.
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"server exited: {log.read().decode()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        else:
            raise RuntimeError("server did not become healthy in 60 s")
        yield proc, url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        if os.environ.get("OPENENV_TEST_SERVER_LOG"):
            log.seek(0)
            print(log.read().decode()[-20000:])
        log.close()
