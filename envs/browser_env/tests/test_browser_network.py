"""Agent script in the page reaches the task pages and nothing else on the machine.

The agent's input can run script in the page (MiniWoB pages put typed text into
``innerHTML``), so the env must hold even when it does: no request from the page may
reach the env server or any other service on loopback. A probe listens on 127.0.0.1
(TCP and UDP, one port) and records every connection and datagram: it must get none.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser_fixtures import BrowserServer, needs_chromium
from browser_env import MODELS, GotoAction, NoopAction, PressAction

from openenv import EnvClient

pytestmark = [needs_chromium, pytest.mark.timeout(180)]


class Probe:
    """A TCP and UDP listener on one 127.0.0.1 port that records whatever reaches it."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.tcp.settimeout(0.1)
        self.udp.settimeout(0.1)
        self.hits: list[str] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._serve_tcp, name="probe-tcp", daemon=True),
            threading.Thread(target=self._serve_udp, name="probe-udp", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _serve_tcp(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.tcp.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    head = conn.recv(200)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                except OSError:
                    head = b""
                self.hits.append(f"tcp {head[:60]!r}")

    def _serve_udp(self) -> None:
        while not self._stop.is_set():
            try:
                data, _ = self.udp.recvfrom(2048)
            except TimeoutError:
                continue
            self.hits.append(f"udp {len(data)} bytes")

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(5)
        self.tcp.close()
        self.udp.close()


@pytest.fixture
def probe() -> Iterator[Probe]:
    p = Probe()
    yield p
    p.close()


@pytest.fixture(scope="module")
def server() -> Iterator[BrowserServer]:
    srv = BrowserServer().start()
    yield srv
    srv.stop()


#: Every way a page reaches out: fetch, image, iframe, WebSocket, beacon, WebRTC (STUN
#: over UDP, TURN over UDP and TCP). Each settles within its own bounded wait.
_REACH_OUT_JS = """async ([probe, envPort]) => {
  const within = (p, ms) => Promise.race([p, new Promise(r => setTimeout(() => r('timeout'), ms))]);
  const get = url => fetch(url, {mode: 'no-cors', cache: 'no-store'}).then(() => 'reached', () => 'failed');
  const ws = url => new Promise(res => {
    let s;
    try { s = new WebSocket(url); } catch (e) { return res('failed'); }
    s.onopen = () => { s.close(); res('open'); };
    s.onerror = () => res('failed');
  });
  const img = url => new Promise(res => {
    const i = new Image(); i.onload = () => res('loaded'); i.onerror = () => res('failed'); i.src = url;
  });
  const frame = url => new Promise(res => {
    const f = document.createElement('iframe'); f.onload = () => res('loaded'); f.src = url;
    document.body.append(f);
  });
  const rtc = async url => {
    const pc = new RTCPeerConnection({iceServers: [{urls: url, username: 'u', credential: 'c'}]});
    pc.createDataChannel('x');
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise(r => {
      pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && r();
    });
    pc.close();
    return 'gathered';
  };
  const p = `127.0.0.1:${probe}`, e = `127.0.0.1:${envPort}`;
  const jobs = {
    env_health: get(`http://${e}/health`),
    env_health_by_name: get(`http://localhost:${envPort}/health`),
    env_ws: ws(`ws://${e}/ws`),
    probe_fetch: get(`http://${p}/fetch`),
    probe_img: img(`http://${p}/img`),
    probe_frame: frame(`http://${p}/frame`),
    probe_ws: ws(`ws://${p}/ws`),
    probe_beacon: Promise.resolve(navigator.sendBeacon(`http://${p}/beacon`, 'x')),
    probe_stun: rtc(`stun:${p}`),
    probe_turn_udp: rtc(`turn:${p}?transport=udp`),
    probe_turn_tcp: rtc(`turn:${p}?transport=tcp`),
  };
  const out = {};
  await Promise.all(Object.entries(jobs).map(async ([k, job]) => { out[k] = await within(job, 6000); }));
  return out;
}"""


_NO_CORS_GET_JS = "url => fetch(url, {mode: 'no-cors'}).then(() => 'reached', () => 'failed')"


def _page(server: BrowserServer, episode: str) -> Any:
    return server.env_of(episode)._page


def test_page_script_reaches_nothing_on_loopback(server: BrowserServer, probe: Probe) -> None:
    with EnvClient(server.url, MODELS) as env:
        env.reset(seed=1, task_id="click-test", episode_id="reach-out")
        page = _page(server, "reach-out")
        got = server.on_loop(lambda: page.evaluate(_REACH_OUT_JS, [probe.port, server.port]), timeout_s=30)
        # The env server's own endpoints: not reached, no WebSocket session opened.
        assert got["env_health"] == "failed", got
        assert got["env_health_by_name"] == "failed", got
        assert got["env_ws"] == "failed", got
        assert got["probe_fetch"] == got["probe_img"] == got["probe_ws"] == "failed", got
        # Whatever the page saw, the probe must have got nothing at all.
        time.sleep(1.0)
        assert probe.hits == [], (probe.hits, got)
        # And the session goes on: the task page is still there and answers.
        assert env.step(NoopAction()).observation.url.endswith("/click-test.html")


def test_the_task_server_is_not_reachable_by_its_address(server: BrowserServer) -> None:
    with EnvClient(server.url, MODELS) as env:
        obs = env.reset(seed=1, task_id="click-test", episode_id="by-address").observation
        host = server.env_of("by-address")._host
        assert obs.url.startswith(host.origin + "/")
        assert "127.0.0.1" not in host.origin  # the pages' origin is no address on this machine
        direct = f"http://127.0.0.1:{host.pages.port}/miniwob/click-test.html"
        got = server.on_loop(lambda: _page(server, "by-address").evaluate(_NO_CORS_GET_JS, direct))
        assert got == "failed"


def _type(env: EnvClient, text: str) -> None:
    for ch in text:
        result = env.step(PressAction(key="Space" if ch == " " else ch))
        assert result.observation.last_action_error is None, (ch, result.observation.last_action_error)


def test_markup_typed_into_the_terminal_stays_text_and_reaches_nothing(
    server: BrowserServer, probe: Probe
) -> None:
    markup = f"<img src=x onerror=fetch('http://127.0.0.1:{probe.port}/xss')>"
    with EnvClient(server.url, MODELS) as env:
        env.reset(seed=1, task_id="terminal", episode_id="terminal-xss", max_steps=200)
        env.step(NoopAction(wait_ms=300))  # the page focuses its hidden input after 200 ms
        _type(env, markup)
        result = env.step(PressAction(key="Enter"))
        env.step(NoopAction(wait_ms=500))
        # The terminal shows what was typed, as text: no element was made from it.
        assert f'text "{markup}"' in result.observation.text.replace('\\"', '"')
        made = server.on_loop(
            lambda: _page(server, "terminal-xss").evaluate(
                "() => document.querySelectorAll('#area img').length"
            )
        )
        assert made == 0
        time.sleep(0.5)
        assert probe.hits == []
        assert not result.done  # "Command not found.": the episode goes on


def _terminal_target(obs_goal: str, listing: str) -> str | None:
    ext = obs_goal.rsplit(".", 1)[1] if "extension ." in obs_goal else ""
    names = [line.split('"')[1] for line in listing.splitlines() if line.count('"') >= 2]
    files = next(n for n in reversed(names) if "." in n or " " in n).split()
    # MiniWoB checks the first occurrence of the extension (shark.sh fails for "sh"):
    # a seed whose only right file is such a name cannot be solved.
    fits = [f for f in files if (f.find(ext) == len(f) - len(ext) if ext else "." not in f)]
    return fits[0] if fits else None


def test_the_terminal_task_is_still_solvable(server: BrowserServer) -> None:
    with EnvClient(server.url, MODELS) as env:
        for seed in range(1, 11):
            obs = env.reset(seed=seed, task_id="terminal", max_steps=100).observation
            env.step(NoopAction(wait_ms=300))
            _type(env, "ls")
            target = _terminal_target(obs.goal, env.step(PressAction(key="Enter")).observation.text)
            if target is not None:
                break
        else:
            pytest.fail("no seed in 1..10 gives a terminal task MiniWoB can score")
        _type(env, f"rm {target}")
        result = env.step(PressAction(key="Enter"))
        assert result.reward == 1.0
        assert result.done


def test_allowed_origins_stay_reachable(probe: Probe) -> None:
    # An origin the operator allows goes straight to its server; loopback elsewhere does not.
    allowed = Probe()
    srv = BrowserServer(allowed_origins=[f"http://127.0.0.1:{allowed.port}"]).start()
    try:
        with EnvClient(srv.url, MODELS) as env:
            env.reset(seed=1, task_id="click-test", episode_id="allowed")
            result = env.step(GotoAction(url=f"http://127.0.0.1:{allowed.port}/page"))
            assert result.observation.last_action_error is None
            assert result.observation.url == f"http://127.0.0.1:{allowed.port}/page"
            got = srv.on_loop(
                lambda: _page(srv, "allowed").evaluate(
                    _NO_CORS_GET_JS,
                    f"http://127.0.0.1:{probe.port}/other",
                )
            )
            assert got == "failed"
        time.sleep(0.5)
        assert any("GET /page" in hit for hit in allowed.hits), allowed.hits
        assert probe.hits == []
    finally:
        srv.stop()
        allowed.close()


def test_a_page_unlike_the_patched_one_fails_the_start(tmp_path: Path) -> None:
    from browser_env._taskserver import PAGE_PATCHES, TaskServer, patched_pages

    rel = next(iter(PAGE_PATCHES))
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_text("<script>x.innerHTML = typed;</script>", encoding="utf-8")
    with pytest.raises(RuntimeError, match="not the page its patch was written for"):
        TaskServer(tmp_path)
    # The wheel's own page takes every patch, and keeps no innerHTML sink of typed text.
    from browser_env._tasks import pages_root

    body = patched_pages(pages_root())["/" + rel].decode()
    assert "innerHTML = commandInput" not in body
    assert "innerHTML = output" not in body
