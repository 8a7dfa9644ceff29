"""One Chromium and one task page server per server process, shared by all sessions.

``BrowserHost`` is the env's per-process resource: the server enters it once at
startup and every session opens its own isolated ``BrowserContext`` (cookies, storage,
cache, renderer processes) in the one browser. Playwright's async API runs on the
server's event loop, so no thread ever touches Playwright objects but that loop's.
"""

from __future__ import annotations

import asyncio
import logging
import os
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ._config import BrowserConfig
from ._taskserver import TaskServer, origin_of, proxy_bypass

__all__ = ["BrowserHost", "TaskServer", "origin_of"]

log = logging.getLogger("browser_env")


class BrowserHost:
    """Async context manager: Playwright, one Chromium, the task server."""

    def __init__(self, config: BrowserConfig) -> None:
        self.config = config
        self.pages: TaskServer | None = None
        self._playwright: Any = None
        self.browser: Any = None
        self.allowed_origins: frozenset[str] = frozenset()
        self._relaunching = asyncio.Lock()

    @property
    def origin(self) -> str:
        assert self.pages is not None, "BrowserHost used before it was entered"
        return self.pages.origin

    def allows(self, url: str) -> bool:
        """Whether the env may navigate to ``url`` (``about:blank`` always)."""
        return url == "about:blank" or origin_of(url) in self.allowed_origins

    def _launch_args(self) -> list[str]:
        assert self.pages is not None, "BrowserHost used before it was entered"
        # Every request, loopback included, goes to the task server acting as a proxy,
        # which serves the task origin and nothing else (see _taskserver); the allowed
        # origins go direct. No DNS but for the allowed hosts, and no WebRTC traffic
        # but through the proxy (which refuses it): a page reaches nothing else.
        hosts = {"127.0.0.1"} | {urlsplit(o).hostname or "" for o in self.config.allowed_origins}
        rules = "MAP * ~NOTFOUND, " + ", ".join(f"EXCLUDE {h}" for h in sorted(hosts) if h)
        return [
            "--disable-dev-shm-usage",  # containers give /dev/shm 64 MiB
            f"--proxy-server={self.pages.proxy}",
            f"--proxy-bypass-list={proxy_bypass(self.config.allowed_origins)}",
            f"--host-resolver-rules={rules}",
            "--webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--disable-background-networking",
            *self.config.chromium_args,
        ]

    async def __aenter__(self) -> BrowserHost:
        if not os.access(self.config.chromium_path, os.X_OK):
            raise FileNotFoundError(
                f"no Chromium at {self.config.chromium_path}: install it (Debian: apt-get install chromium) "
                "or set chromium_path / OPENENV_BROWSER_CHROMIUM"
            )
        try:
            from playwright.async_api import async_playwright
        except ImportError:
            raise ModuleNotFoundError(
                "browser_env needs Playwright: pip install 'playwright>=1.50' "
                "(it drives the system Chromium: no 'playwright install')"
            ) from None

        self.pages = TaskServer()
        self.allowed_origins = frozenset({self.pages.origin, *map(origin_of, self.config.allowed_origins)})
        try:
            self._playwright = await async_playwright().start()
            await self._launch()
        except BaseException:
            await self.aclose()
            raise
        log.info("browser_env: Chromium %s, task pages at %s", self.browser.version, self.pages.origin)
        return self

    async def _launch(self) -> None:
        self.browser = await self._playwright.chromium.launch(
            executable_path=self.config.chromium_path,
            headless=self.config.headless,
            args=self._launch_args(),
        )

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the browser, Playwright's driver and the task server. Idempotent."""
        browser, playwright, pages = self.browser, self._playwright, self.pages
        self.browser = self._playwright = self.pages = None
        try:
            if browser is not None:
                await browser.close()
        finally:
            try:
                if playwright is not None:
                    await playwright.stop()
            finally:
                if pages is not None:
                    pages.close()

    async def new_context(self) -> Any:
        """A fresh isolated context: its own cookies, storage, cache and renderers.

        If the browser has died (killed, crashed), a new one is launched first: the
        sessions that lived in the old one end, later sessions get the new one.
        """
        assert self._playwright is not None, "BrowserHost used before it was entered"
        async with self._relaunching:
            if self.browser is None or not self.browser.is_connected():
                log.warning("browser_env: Chromium is gone; launching a new one")
                self.browser = None
                await self._launch()
        assert self.browser is not None
        return await self.browser.new_context(
            viewport={"width": self.config.viewport_width, "height": self.config.viewport_height},
            service_workers="block",
            accept_downloads=False,
        )
