"""``openenv capture serve``: says the probed capture level, serves, stops on SIGTERM;
a taken port is one line and exit 2."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from ._scripted import ScriptedBackend

pytestmark = pytest.mark.timeout(90)
CLI = [sys.executable, "-m", "openenv", "capture", "serve"]


def test_serve_says_the_level_and_proxies(backend: ScriptedBackend) -> None:
    proc = subprocess.Popen(
        [*CLI, "--llm-url", backend.url, "--port", "0"], stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the start-up line
        assert "capture level tokens (trainable)" in line, line
        url = re.search(r"capture proxy on (http://\S+) ", line)
        assert url is not None
        made = httpx.post(url.group(1) + "/sessions", json={}, timeout=10).json()
        reply = httpx.post(
            url.group(1) + "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            headers={"authorization": f"Bearer {made['session_id']}"},
            timeout=10,
        )
        assert reply.json()["choices"][0]["message"]["content"] == "reply to: hi"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0


def test_a_taken_port_is_one_line_and_exit_2(backend: ScriptedBackend) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        start = time.monotonic()
        done = subprocess.run(
            [*CLI, "--llm-url", backend.url, "--port", str(port), "--capture-level", "tokens"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert done.stderr.startswith("openenv capture: capture port")
    assert "taken" in done.stderr
    assert time.monotonic() - start < 60


def test_a_public_bind_without_an_admin_key_is_refused(backend: ScriptedBackend) -> None:
    done = subprocess.run(
        [*CLI, "--llm-url", backend.url, "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("openenv capture: --host 0.0.0.0")
    assert "--admin-key" in done.stderr
