"""``openenv serve --session-limits``: the flag sets each session's kernel limits, and
``/metadata`` (and ``/health``) report them with the sandbox level in force."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from openenv.cli import build_parser
from openenv.containers._local import free_port
from openenv.sandbox import SandboxConfig
from openenv.sandbox._config import MiB
from openenv.sandbox._sandbox import session_limits_support

from .._served import stop_child, wait_served

pytestmark = pytest.mark.timeout(120)

SPEC = "memory=300M,cpus=0.5,pids=64,disk=64M"
MISSING = session_limits_support(SandboxConfig().with_session_limits(disk_bytes=64 * MiB))[2]


@contextmanager
def serve(*args: str, log: Path, env_name: str = "terminal") -> Iterator[str]:
    """``openenv serve ENV ARGS`` as a real process on loopback; yields its URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "openenv", "serve", env_name, "--host", "127.0.0.1", "--port", str(port)]
    cmd += args
    env = {k: v for k, v in os.environ.items() if k not in ("OPENENV_SANDBOX", "OPENENV_SANDBOX_LIMITS")}
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_served(url, proc, 60, log=log)
        yield url
    finally:
        stop_child(proc, 20)


def test_the_flag_is_parsed() -> None:
    args = build_parser().parse_args(["serve", "terminal", "--session-limits", SPEC])
    assert args.session_limits == SPEC
    assert build_parser().parse_args(["serve", "terminal"]).session_limits is None


@pytest.mark.parametrize("level", ["none", "auto"])
def test_metadata_reports_the_limits_set_by_the_flag(level: str, tmp_path: Path) -> None:
    with serve("--sandbox", level, "--session-limits", SPEC, log=tmp_path / "serve.log") as url:
        meta = httpx.get(f"{url}/metadata", timeout=10).json()["sandbox"]
        health = httpx.get(f"{url}/health", timeout=10).json()["sandbox"]
    assert meta["requested"] == level
    assert meta["level"] in ("bwrap", "rlimits")
    limits = meta["session_limits"]
    assert (limits["memory_bytes"], limits["cpus"], limits["pids"], limits["disk_bytes"]) == (
        300 * MiB,
        0.5,
        64,
        64 * MiB,
    )
    assert limits["cpu_weight"] == 100  # not named in the flag: the default
    assert limits["enforced"] is (MISSING == "")
    assert limits["reason"] == (MISSING or None)
    assert health["session_limits"] == limits


def test_off_turns_them_off(tmp_path: Path) -> None:
    with serve("--sandbox", "none", "--session-limits", "off", log=tmp_path / "serve.log") as url:
        limits = httpx.get(f"{url}/metadata", timeout=10).json()["sandbox"]["session_limits"]
    assert limits["memory_bytes"] is None
    assert limits["disk_bytes"] is None
    assert limits["enforced"] is False
    assert limits["reason"] == "no session limits configured"


def test_a_bad_spec_is_refused_before_serving() -> None:
    cmd = [
        sys.executable,
        "-m",
        "openenv",
        "serve",
        "terminal",
        "--port",
        str(free_port()),
        "--session-limits",
        "memory=lots",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--session-limits" in done.stderr
    assert "cannot read 'memory=lots'" in done.stderr


@pytest.mark.parametrize("env_name", ["terminal", "coding"])
def test_an_envs_own_limits_go_over_the_servers(env_name: str, tmp_path: Path) -> None:
    """``session_limits`` as the env's argument (per env) wins over ``--session-limits``
    (per server); the limits it does not name keep the server's."""
    own = '{"session_limits": "memory=200M,pids=32"}'
    args = ("--sandbox", "none", "--session-limits", SPEC, "--env-kwargs", own)
    with serve(*args, log=tmp_path / "serve.log", env_name=env_name) as url:
        limits = httpx.get(f"{url}/metadata", timeout=10).json()["sandbox"]["session_limits"]
    assert (limits["memory_bytes"], limits["pids"]) == (200 * MiB, 32)
    assert (limits["cpus"], limits["disk_bytes"]) == (1.0, 1024 * MiB)  # the env's spec names neither


@pytest.mark.parametrize("env_name", ["terminal", "coding"])
def test_an_envs_bad_limits_stop_the_server_with_a_message(env_name: str) -> None:
    cmd = [sys.executable, "-m", "openenv", "serve", env_name, "--port", str(free_port())]
    cmd += ["--env-kwargs", '{"session_limits": "memory=lots"}']
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "memory=lots" in done.stderr
    assert "Traceback" not in done.stderr
