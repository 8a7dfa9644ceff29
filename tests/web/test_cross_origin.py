"""Browser-origin protection in a real browser (Playwright on Debian's /usr/bin/chromium).

A page served by a second local server, on another port (another origin), tries what
any web page the user opens could try against a local env server: open ``/ws`` and
reset, POST ``/sessions``, ``/mcp`` and ``/reset`` (``no-cors``, as a page may without
asking), and read the replies (``cors``). None of it may reach the env. A name that
resolves to ``127.0.0.1`` (DNS rebinding, mapped with Chromium's
``--host-resolver-rules``) gets no page either. And the ``/web`` playground of a server
with ``--auth-token`` asks for the token and works with it.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from echo_env import EchoEnv

from .._chromium import headless_chromium, page_of

REBOUND = "rebound.example"
TOKEN = "pl4yground-token"

ATTACK_PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>attack</title></head><body>
<script>
const target = new URLSearchParams(location.search).get("target");
const base = `http://127.0.0.1:${target}`;
const results = {};

function socket() {
  return new Promise((resolve) => {
    const events = [];
    const done = () => resolve(events);
    const ws = new WebSocket(`ws://127.0.0.1:${target}/ws`);
    ws.onopen = () => { events.push("open"); ws.send(JSON.stringify({type: "reset", data: {}})); };
    ws.onmessage = (m) => { events.push("message " + String(m.data).slice(0, 120)); ws.close(); };
    ws.onerror = () => events.push("error");
    ws.onclose = (c) => { events.push("close " + c.code); done(); };
    setTimeout(() => { events.push("timeout"); done(); }, 8000);
  });
}

async function post(path, body, mode) {
  try {
    const r = await fetch(base + path, {method: "POST", mode, body});
    return mode === "no-cors" ? "sent" : "read " + r.status + " " + (await r.text()).slice(0, 120);
  } catch (e) {
    return "failed";
  }
}

function image(path) {
  return new Promise((resolve) => {
    const img = new Image();
    img.onload = () => resolve("loaded");
    img.onerror = () => resolve("error");
    img.src = base + path;
    setTimeout(() => resolve("timeout"), 8000);
  });
}

async function attack() {
  results.img = await image("/state");  // a GET without Origin: Sec-Fetch-Site says whose
  results.ws = await socket();
  const create = JSON.stringify({jsonrpc: "2.0", id: 1, method: "openenv/session/create"});
  const posts = [["sessions", "/sessions", ""], ["mcp", "/mcp", create], ["reset", "/reset", "{}"]];
  for (const [name, path, body] of posts) {
    results[name] = await post(path, body, "no-cors");
    results[name + " cors"] = await post(path, body, "cors");
  }
  document.body.dataset.results = JSON.stringify(results);
}
attack();
</script></body></html>"""


class _PageHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(ATTACK_PAGE)))
        self.end_headers()
        self.wfile.write(ATTACK_PAGE)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def other_origin() -> Iterator[str]:
    """A second local server (another port: another origin) serving the attack page."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PageHandler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def chromium():
    with headless_chromium(f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1") as browser:
        yield browser


@pytest.fixture
def page(chromium):
    with page_of(chromium) as page:
        yield page


@pytest.mark.timeout(90)
def test_a_page_of_another_origin_can_neither_drive_nor_read_the_server(serve, other_origin, page):
    server = serve()  # the test env: its tracker sees every env built
    page.goto(f"{other_origin}/?target={server.port}")
    page.wait_for_function("document.body.dataset.results !== undefined", timeout=30000)
    results = orjson.loads(page.evaluate("document.body.dataset.results"))
    assert "open" not in results["ws"], results  # the handshake was refused (403)
    assert not any(e.startswith("message") for e in results["ws"]), results
    for name in ("sessions", "mcp", "reset"):
        assert results[name] == "sent", results  # the browser did send the no-cors POSTs
        assert results[f"{name} cors"] == "failed", results  # and could read nothing
    assert results["img"] == "error", results
    assert server.tracker.instances == []  # not one env was built, not even a throwaway one
    assert server.manager.active == 0
    assert page.errors == []


@pytest.mark.timeout(90)
def test_the_same_attack_works_only_where_the_origin_is_allowed(serve, other_origin, page):
    """The control: the page and the browser do reach the server when it lets that origin in."""
    server = serve(EchoEnv, allowed_origins=other_origin)
    page.goto(f"{other_origin}/?target={server.port}")
    page.wait_for_function("document.body.dataset.results !== undefined", timeout=30000)
    results = orjson.loads(page.evaluate("document.body.dataset.results"))
    assert results["ws"][0] == "open", results
    assert results["ws"][1].startswith('message {"type":"observation"'), results


@pytest.mark.timeout(90)
def test_a_rebound_name_gets_no_page(serve, page):
    server = serve(EchoEnv)
    refused = page.goto(f"http://{REBOUND}:{server.port}/web/")
    assert refused is not None
    assert refused.status == 403
    assert "FORBIDDEN" in page.content()
    served = page.goto(f"http://localhost:{server.port}/web/")
    assert served is not None
    assert served.status == 200
    page.wait_for_selector("#status.ok", timeout=15000)


@pytest.mark.timeout(90)
def test_the_playground_asks_for_the_token_and_works_with_it(serve, page):
    server = serve(EchoEnv, auth_token=TOKEN)
    page.goto(f"{server.url}/web")
    page.wait_for_selector("#status.bad", timeout=15000)
    assert page.inner_text("#status") == "token needed"
    assert page.is_visible("#token-form")
    page.fill("#token", "wrong")
    page.click("#token-button")
    page.wait_for_selector("#status.bad", timeout=15000)  # cleared on submit, refused again
    assert "UNAUTHORIZED" in page.inner_text("#error")
    assert page.is_visible("#token-form")
    page.fill("#token", TOKEN)
    page.click("#token-button")
    page.wait_for_selector("#status.ok", timeout=15000)
    assert not page.is_visible("#token-form")
    assert page.inner_text("#env-name") == "echo_env"
    page.click("#reset-button")
    page.wait_for_selector("#step-button:not([disabled])")
    page.fill("#action-fields [name=message]", "hi")
    page.click("#step-button")
    page.wait_for_function("document.querySelectorAll('#history tbody tr').length === 2")
    assert '"echoed_message": "hi"' in page.inner_text("#observation")
    assert server.manager.active == 1  # the page's one HTTP session
    page.reload()  # the token stays for this tab
    page.wait_for_selector("#status.ok", timeout=15000)
    assert page.errors == []


def test_under_a_token_only_the_playground_s_files_are_open(serve):
    server = serve(EchoEnv, auth_token=TOKEN)
    with httpx.Client(base_url=server.url, timeout=10) as http:
        for path in ("/web", "/web/", "/web/playground.js", "/web/playground.css", "/health"):
            assert http.get(path).status_code in (200, 307), path
        for path in ("/web/secret.py", "/metadata", "/schema", "/sessions", "/", "/docs"):
            assert http.get(path).status_code == 401, path
        assert http.post("/sessions").status_code == 401
        assert http.post("/sessions", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 201
