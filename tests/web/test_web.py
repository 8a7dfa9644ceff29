"""``/web``: the playground's routes, served lazily, and ``--no-web``."""

from __future__ import annotations

import re
import subprocess
import sys

import httpx
from echo_env import EchoEnv

from openenv.server import _web


def test_page_and_assets(serve):
    url = serve(EchoEnv).url
    redirect = httpx.get(f"{url}/web")
    assert redirect.status_code == 307
    assert redirect.headers["location"] == "/web/"
    page = httpx.get(f"{url}/web/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert '<script src="playground.js"></script>' in page.text
    js = httpx.get(f"{url}/web/playground.js")
    assert js.headers["content-type"] == "text/javascript; charset=utf-8"
    assert "function unionField" in js.text
    assert httpx.get(f"{url}/web/playground.css").status_code == 200
    assert httpx.get(f"{url}/web/secret.py").status_code == 404
    assert httpx.get(f"{url}/web/..%2F_web.py").status_code == 404


def test_no_cdn_and_no_external_urls():
    for name in ("index.html", "playground.js", "playground.css"):
        text = _web._read(name).decode()
        assert re.search(r"https?://", text) is None, name


def test_web_can_be_turned_off(serve):
    url = serve(EchoEnv, web=False).url
    assert httpx.get(f"{url}/web/").status_code == 404
    assert httpx.get(f"{url}/health").status_code == 200


def test_files_are_read_on_first_request_not_at_startup():
    code = (
        "from openenv.server import create_app, _web\n"
        "from echo_env import EchoEnv\n"
        "create_app(EchoEnv)\n"
        "print(len(_web._cache))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "0"


def test_cli_no_web_flag(tmp_path):
    import os
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "openenv", "serve", "envs/echo_env", "--port", str(port), "--no-web"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, "openenv serve exited"
            assert time.monotonic() < deadline, "openenv serve not healthy in 30 s"
            time.sleep(0.05)
        assert httpx.get(f"http://127.0.0.1:{port}/web/").status_code == 404
    finally:
        proc.terminate()
        proc.wait(10)
    assert os.environ.get("OPENENV_WEB") is None  # the flag, not the environment, turned it off


def test_openenv_web_variable_turns_it_off():
    from openenv.server import ServerSettings

    assert ServerSettings.from_env({}).web is True
    assert ServerSettings.from_env({"OPENENV_WEB": "false"}).web is False
