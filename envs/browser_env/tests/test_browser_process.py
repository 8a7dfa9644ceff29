"""``openenv serve envs/browser_env`` as a real process: no Chromium outlives it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import psutil
import pytest
from _browser_fixtures import needs_chromium
from browser_env import MODELS, ClickAction

from openenv import EnvClient

pytestmark = [needs_chromium, pytest.mark.timeout(120)]

ENV_DIR = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _browsers_of(proc: psutil.Process) -> list[psutil.Process]:
    """Live (not zombie) Chromium processes under ``proc``."""
    found = []
    for p in proc.children(recursive=True):
        try:
            if "chrom" in p.name().lower() and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.Error:
            pass
    return found


def _serve(log: IO[bytes]) -> tuple[subprocess.Popen[bytes], str]:
    """``openenv serve envs/browser_env`` on a free port, once it accepts connections."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", str(ENV_DIR), "--port", str(port), "--no-web"],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                log.seek(0)
                raise RuntimeError(f"server did not start: {log.read().decode()[-2000:]}") from None
            time.sleep(0.1)
    return proc, url


def _use(proc: subprocess.Popen[bytes], url: str) -> list[psutil.Process]:
    """Run episodes in two sessions; the server's Chromium processes."""
    with EnvClient(url, MODELS) as a, EnvClient(url, MODELS) as b:
        a.reset(seed=1, task_id="click-test")
        b.reset(seed=2, task_id="click-test")
        assert a.step(ClickAction(id=2)).reward == 1.0
        browsers = _browsers_of(psutil.Process(proc.pid))
        # One browser process tree for the whole server, however many sessions.
        roots = [p for p in browsers if "chrom" not in p.parent().name().lower()]
        assert len(roots) == 1, roots
    return browsers


def _wait_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(procs, timeout=timeout_s)
    return [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_no_chromium_outlives_the_server(sig: signal.Signals) -> None:
    with tempfile.TemporaryFile() as log:
        proc, url = _serve(log)
        try:
            browsers = _use(proc, url)
            assert browsers
            os.kill(proc.pid, sig)
            proc.wait(30)
        finally:
            if proc.poll() is None:  # a failed check above: do not leave the server running
                proc.kill()
                proc.wait(10)
    left = _wait_gone(browsers, 15)
    for p in left:  # clean up before failing
        p.kill()
    assert not left, [(p.pid, p.name()) for p in left]
