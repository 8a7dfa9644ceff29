"""Sessions share one Chromium but nothing else; a hung or crashed page ends only its own."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from _browser_fixtures import BrowserServer, needs_chromium
from browser_env import MODELS, ClickAction, NoopAction
from browser_env.solutions import SOLUTIONS

from openenv import AsyncEnvClient, EnvClient, SessionClosed

pytestmark = [needs_chromium, pytest.mark.timeout(120)]

TASKS = ("click-test", "click-button", "enter-text", "choose-list")


@pytest.fixture(scope="module")
def server() -> Iterator[BrowserServer]:
    # short enough for the hung page's click to time out soon; long enough for a healthy
    # session's clicks on a loaded host (Chromium shares the cores with everything else)
    srv = BrowserServer(hang_timeout_s=3.0, action_timeout_s=3.0).start()
    yield srv
    srv.stop()


def test_one_browser_for_all_sessions(server: BrowserServer) -> None:
    with EnvClient(server.url, MODELS) as a, EnvClient(server.url, MODELS) as b:
        a.reset(seed=1, task_id="click-test", episode_id="one-a")
        b.reset(seed=1, task_id="click-test", episode_id="one-b")
        env_a, env_b = server.env_of("one-a"), server.env_of("one-b")
        assert env_a._host is env_b._host is not None
        assert env_a._context is not env_b._context


async def _cookies_and_pages(server: BrowserServer) -> None:
    clients = [AsyncEnvClient(server.url, MODELS) for _ in TASKS]
    try:
        for client in clients:
            await client.connect()
        ids = [f"iso-{i}" for i in range(len(TASKS))]
        firsts = await asyncio.gather(
            *(c.reset(seed=7, task_id=t, episode_id=e) for c, t, e in zip(clients, TASKS, ids, strict=True))
        )
        for result, task in zip(firsts, TASKS, strict=True):
            assert result.observation.url.endswith(f"/{task}.html")

        def mark(env: Any, value: str) -> Any:
            js = "(v) => { document.cookie = 'who=' + v + '; path=/'; localStorage.setItem('who', v); }"
            return env._page.evaluate(js, value)

        for episode in ids:
            server.on_loop(lambda e=episode: mark(server.env_of(e), e))

        # Every session steps at once; each sees its own page, cookie and storage only.
        results = await asyncio.gather(*(c.step(NoopAction()) for c in clients))
        for result, task in zip(results, TASKS, strict=True):
            assert result.observation.url.endswith(f"/{task}.html")
        for episode in ids:
            seen = server.on_loop(
                lambda e=episode: server.env_of(e)._page.evaluate(
                    "() => [document.cookie, localStorage.getItem('who')]"
                )
            )
            assert seen == [f"who={episode}", episode]
        # And a new episode in the same session starts clean.
        await clients[0].reset(seed=7, task_id=TASKS[0], episode_id="iso-again")
        seen = server.on_loop(lambda: server.env_of("iso-again")._page.evaluate("() => document.cookie"))
        assert seen == ""
    finally:
        for client in clients:
            await client.close()


def test_four_concurrent_sessions_are_isolated(server: BrowserServer) -> None:
    asyncio.run(_cookies_and_pages(server))


def _solve(client: EnvClient, task: str, seed: int) -> float | None:
    obs = client.reset(seed=seed, task_id=task).observation
    result = None
    for action in SOLUTIONS[task](obs):
        result = client.step(action)
    assert result is not None
    return result.reward


@contextlib.contextmanager
def _two_sessions(server: BrowserServer, victim: str) -> Iterator[tuple[EnvClient, EnvClient]]:
    with EnvClient(server.url, MODELS) as healthy, EnvClient(server.url, MODELS) as doomed:
        healthy.reset(seed=1, task_id="click-test", episode_id=f"{victim}-healthy")
        doomed.reset(seed=1, task_id="click-test", episode_id=victim)
        yield healthy, doomed


def test_hung_page_ends_only_its_session(server: BrowserServer) -> None:
    with _two_sessions(server, "hung") as (healthy, doomed):
        env = server.env_of("hung")
        server.on_loop(lambda: env._page.evaluate("() => { setTimeout(() => { for (;;) {} }, 0); }"))
        with pytest.raises(SessionClosed, match="hung"):
            doomed.step(ClickAction(id=2))  # click-test's button: the click and the probe both time out
        with pytest.raises(SessionClosed, match="hung"):
            doomed.step(NoopAction())
        assert _solve(healthy, "click-button", 5) == 1.0
        with EnvClient(server.url, MODELS) as fresh:
            assert _solve(fresh, "click-test", 2) == 1.0


async def _send_unanswered(cdp: Any, method: str, until: asyncio.Future[None]) -> None:
    """Send a CDP command that is never answered (it crashes what would answer) and wait
    for ``until``, the event that shows it took effect (bounded: 30 s)."""
    sent = asyncio.ensure_future(cdp.send(method))
    try:
        await asyncio.wait_for(until, 30)
    finally:
        sent.cancel()
        with contextlib.suppress(BaseException):
            await sent


def test_crashed_renderer_ends_only_its_session(server: BrowserServer) -> None:
    with _two_sessions(server, "crash") as (healthy, doomed):
        env = server.env_of("crash")

        async def crash() -> None:
            # until the page's crash event (the env's own handler, added first, has run by then)
            crashed = asyncio.get_running_loop().create_future()
            env._page.once("crash", lambda _page: crashed.done() or crashed.set_result(None))
            cdp = await env._context.new_cdp_session(env._page)
            await _send_unanswered(cdp, "Page.crash", crashed)

        server.on_loop(crash, timeout_s=40)
        with pytest.raises(SessionClosed, match="crashed"):
            doomed.step(NoopAction())
        with pytest.raises(SessionClosed, match="crashed"):
            doomed.step(NoopAction())  # the server closed that session and freed its slot
        assert _solve(healthy, "enter-text", 5) == 1.0
        assert _solve(doomed, "click-test", 2) == 1.0  # a reset opens a fresh session


def test_page_leaving_the_allowed_origins_is_sent_back(server: BrowserServer) -> None:
    with EnvClient(server.url, MODELS) as env:
        obs = env.reset(seed=1, task_id="click-test", episode_id="leaver").observation
        page = server.env_of("leaver")._page
        # The page itself (not a goto) sends the browser elsewhere when the button is clicked;
        # Chromium resolves no outside host, so it lands on its error page: sent back too.
        js = "() => { subbtn.onclick = () => { location.href = 'https://example.com/x'; }; }"
        server.on_loop(lambda: page.evaluate(js))
        result = env.step(ClickAction(id=2))
        assert "outside the allowed origins: navigation refused" in (
            result.observation.last_action_error or ""
        )
        assert result.observation.url == obs.url


def test_a_dead_browser_ends_its_sessions_and_the_next_gets_a_new_one() -> None:
    srv = BrowserServer(hang_timeout_s=3.0).start()  # its own browser: this test kills it
    try:
        with EnvClient(srv.url, MODELS) as old:
            old.reset(seed=1, task_id="click-test", episode_id="doomed-browser")
            host = srv.env_of("doomed-browser")._host

            async def crash_browser() -> None:
                gone = asyncio.get_running_loop().create_future()
                host.browser.once("disconnected", lambda _b: gone.done() or gone.set_result(None))
                cdp = await host.browser.new_browser_cdp_session()
                await _send_unanswered(cdp, "Browser.crash", gone)

            srv.on_loop(crash_browser, timeout_s=40)
            with pytest.raises(SessionClosed, match=r"closed under it|crashed"):
                old.step(NoopAction())
            with EnvClient(srv.url, MODELS) as new:
                assert _solve(new, "click-test", 3) == 1.0
            assert host.browser.is_connected()
    finally:
        srv.stop()
