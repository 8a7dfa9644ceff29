"""Which thread design for Playwright: measured with N sessions stepping at once.

* ``async``: Playwright's async API on one event loop, one Chromium, one context per
  session (what ``BrowserEnv`` does, as an ``AsyncEnvironment`` on the server's loop).
* ``thread``: the sync API on one dedicated thread per session (``DEDICATED_THREAD``).
  A sync Playwright instance and everything it made belong to the thread that started
  it, so each session needs its own Playwright driver and its own Chromium.

Each session runs the same step (click a checkbox, read the page) ``steps`` times;
figures: median step latency, aggregate steps/s, and the PSS of the Playwright drivers
and browsers this process started (shared pages counted once).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import threading
import time
from typing import Any

import psutil
from browser_env import _page, _tasks
from browser_env._config import BrowserConfig
from browser_env._host import BrowserHost, TaskServer

TASK, CHECKBOX = "click-checkboxes", 3
CLICK = f'[data-oe-id="{CHECKBOX}"]'


def children_pss_mib() -> float:
    total = 0
    for p in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += p.memory_full_info().pss
    return total / 2**20


def run_async(n: int, steps: int) -> dict[str, float]:
    async def main() -> dict[str, float]:
        host = await BrowserHost(BrowserConfig()).__aenter__()
        try:
            pages = []
            for i in range(n):
                page = await (await host.new_context()).new_page()
                await page.goto(host.origin + f"/miniwob/{TASK}.html")
                await page.evaluate(_tasks.START_JS, [i, 600_000])
                await _page.read(page, None, _tasks.EXCLUDE_SELECTOR, _tasks.SCORE_JS)
                pages.append(page)

            async def session(page: Any) -> list[float]:
                out = []
                for _ in range(steps):
                    t0 = time.perf_counter()
                    await page.locator(CLICK).first.click()
                    await _page.read(page, None, _tasks.EXCLUDE_SELECTOR, _tasks.SCORE_JS)
                    out.append(time.perf_counter() - t0)
                return out

            t0 = time.perf_counter()
            lats = await asyncio.gather(*(session(p) for p in pages))
            wall = time.perf_counter() - t0
            pss = children_pss_mib()
        finally:
            await host.aclose()
        return _figures(lats, wall, pss)

    try:
        from uvloop import run  # what the server runs
    except ImportError:
        from asyncio import run  # type: ignore[assignment]
    return run(main())


def run_threads(n: int, steps: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    config, pages = BrowserConfig(), TaskServer()
    host = BrowserHost(config)
    host.pages = pages  # its launch switches name the task server (Chromium's proxy)
    lats: list[list[float]] = [[] for _ in range(n)]
    ready, go, measured = threading.Barrier(n + 1), threading.Event(), threading.Event()

    def session(i: int) -> None:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=config.chromium_path, args=host._launch_args())
            page = browser.new_page()
            page.goto(pages.origin + f"/miniwob/{TASK}.html")
            page.evaluate(_tasks.START_JS, [i, 600_000])
            read = (_page.snapshot_js(), [None, _tasks.EXCLUDE_SELECTOR, _tasks.SCORE_JS])
            page.evaluate(*read)
            ready.wait(120)
            go.wait(120)
            for _ in range(steps):
                t0 = time.perf_counter()
                page.locator(CLICK).first.click()
                page.evaluate(*read)
                lats[i].append(time.perf_counter() - t0)
            measured.wait(120)
            browser.close()

    threads = [threading.Thread(target=session, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    try:
        ready.wait(120)
        t0 = time.perf_counter()
        go.set()
        while any(len(x) < steps for x in lats) and time.perf_counter() - t0 < 600:
            time.sleep(0.01)
        wall = time.perf_counter() - t0
        pss = children_pss_mib()
    finally:
        go.set()
        measured.set()
        for t in threads:
            t.join(60)
        pages.close()
    return _figures(lats, wall, pss)


def _figures(lats: list[list[float]], wall: float, pss: float) -> dict[str, float]:
    flat = [x for xs in lats for x in xs]
    return {"step_p50_ms": statistics.median(flat) * 1e3, "steps_per_s": len(flat) / wall, "pss_mib": pss}


def compare(sessions: tuple[int, ...], steps: int) -> dict[str, dict[str, float]]:
    """Both designs at each N, async first."""
    out = {}
    for n in sessions:
        out[f"async N={n}"] = run_async(n, steps)
        out[f"thread N={n}"] = run_threads(n, steps)
    return out
