"""The browser env: MiniWoB++ tasks in headless Chromium, one isolated context per session."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar

from pydantic import ValidationError

from openenv import AsyncEnvironment, SessionClosed, ValidationFailed

from . import _page, _tasks
from ._config import BrowserConfig
from ._host import BrowserHost
from .models import (
    BrowserAction,
    BrowserObservation,
    BrowserResetOptions,
    BrowserState,
    GotoAction,
    NoopAction,
)

log = logging.getLogger("browser_env")
T = TypeVar("T")

_CLEAR_STORAGE_JS = "() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }"


class BrowserEnv(AsyncEnvironment[BrowserAction, BrowserObservation, BrowserState]):  # type: ignore[type-var]
    """Web tasks (MiniWoB++) in a real headless Chromium; reward from the task's own scoring.

    Reset options (``BrowserResetOptions``): ``task_id`` (default: drawn from the seed),
    ``max_steps``, ``screenshot``, ``time_limit_s``. Constructor keywords: ``BrowserConfig``.
    A page that stops answering, or whose renderer crashes, ends its session
    (``SessionClosed``); other sessions go on.
    """

    env_name = "browser_env"
    env_version = "0.1.0"
    reset_options_model = BrowserResetOptions
    max_sessions = 128  # about 60 MiB of Chromium each

    @classmethod
    def process_resources(cls, **env_kwargs: Any) -> BrowserHost:
        return BrowserHost(BrowserConfig.from_kwargs(**env_kwargs))

    def __init__(self, resources: BrowserHost | None = None, **env_kwargs: Any) -> None:
        # Without the server's per-process host (a bare instance), the env starts its own.
        self._config = resources.config if resources is not None else BrowserConfig.from_kwargs(**env_kwargs)
        self._host = resources
        self._own_host: BrowserHost | None = None
        self._context: Any = None
        self._page: Any = None
        self._ended: str | None = None
        self._crashed = False
        self._task = _tasks.Task("", 0)
        self._options = BrowserResetOptions()
        self._state = BrowserState()
        self._ids: frozenset[int] = frozenset()
        self._done = False

    # --- the protocol -------------------------------------------------------------

    async def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None
    ) -> BrowserObservation:
        self._check_alive()
        opts = self._parse_options(options)
        task = _tasks.choose(opts.task_id, opts.index, opts.split, seed)
        host = await self._get_host()
        page = await self._fresh_page(host)
        load_s = self._config.load_timeout_s
        await self._guard(page.goto(host.origin + task.path), "loading the task page", load_s + 5)
        limit_ms = int(opts.time_limit_s * 1000)
        start = page.evaluate(_tasks.start_js(task.task_id), [task.page_seeds(), limit_ms])
        if not await self._guard(start, "starting the task"):
            await self._guard(page.wait_for_function("WOB_TASK_READY", polling=20), "the task getting ready")
        self._task, self._options, self._done = task, opts, False
        self._state = BrowserState(
            episode_id=episode_id or uuid.uuid4().hex, task_id=task.task_id, seed=seed, url=page.url
        )
        return await self._observe(None)

    async def step(self, action: BrowserAction, timeout_s: float | None = None) -> BrowserObservation:
        """``timeout_s``: the step request's deadline, kept here: a ``noop`` waits at most
        that long (page actions keep their own bounds); then the page is observed."""
        self._check_alive()
        if self._page is None:
            raise RuntimeError("step before reset")
        act = action.root if isinstance(action, BrowserAction) else action
        if self._done:
            return await self._observe("the episode is over: call reset", count_step=False)
        self._state.step_count += 1
        error = await self._act(act, timeout_s)
        return await self._observe(error)

    async def state(self) -> BrowserState:
        self._check_alive()
        return self._state.model_copy()

    async def close(self) -> None:
        await self._close_context()
        if self._own_host is not None:
            host, self._own_host = self._own_host, None
            await host.aclose()

    # --- one step -------------------------------------------------------------------

    async def _act(self, act: Any, timeout_s: float | None = None) -> str | None:
        """Apply the action; the error text for the agent, or None."""
        host = self._host or self._own_host
        assert host is not None
        assert self._page is not None
        page = self._page
        if isinstance(act, NoopAction):
            if act.wait_ms:
                wait_s = min(act.wait_ms, self._config.max_wait_ms) / 1000
                if timeout_s is not None:  # time left to read the page by the deadline (up to 1 s, half)
                    wait_s = min(wait_s, timeout_s - min(1.0, timeout_s / 2))
                await asyncio.sleep(wait_s)
            return None
        if isinstance(act, GotoAction):
            if not host.allows(act.url):
                allowed = ", ".join(sorted(host.allowed_origins))
                return f"navigation to {act.url!r} refused: only {allowed} allowed"
            error = await self._attempt(page.goto(act.url), "goto", self._config.load_timeout_s)
        else:
            element = getattr(act, "id", None)
            if element is not None and element not in self._ids:
                return f"no element [{element}] in the last observation"
            error = await self._attempt(
                _page.apply(page, act, self._config.action_timeout_s * 1000), act.type
            )
        if not host.allows(page.url):
            # A link, redirect or script left the allowed origins: do not show that page.
            left = page.url
            await self._attempt(page.go_back(), "going back", self._config.load_timeout_s)
            if not host.allows(page.url):
                await self._attempt(page.goto("about:blank"), "leaving", self._config.load_timeout_s)
            error = f"the page went to {left!r}, outside the allowed origins: navigation refused"
        return error

    async def _attempt(self, call: Awaitable[Any], what: str, timeout_s: float | None = None) -> str | None:
        """Run one action; Playwright's complaint as text, after checking the page is alive."""
        from playwright.async_api import Error as PlaywrightError

        try:
            limit = (timeout_s or self._config.action_timeout_s) + self._config.hang_timeout_s
            await self._guard(call, what, limit)
        except (PlaywrightError, ValueError) as exc:
            if self._crashed:
                await self._end("the page's renderer crashed")
            if self._page is None or self._page.is_closed():
                await self._end("the page was closed under it (the browser exited?)")
            # A timed-out action may mean a hung page: a page that answers nothing ends the session.
            await self._guard(self._page.evaluate("1"), "a liveness check after a failed action")
            return f"{what} failed: {_page.error_text(exc)}"
        return None

    async def _observe(self, error: str | None, *, count_step: bool = True) -> BrowserObservation:
        page = self._page
        reading = _page.read(page, None, _tasks.EXCLUDE_SELECTOR, _tasks.SCORE_JS)
        snap = await self._guard(reading, "reading the page")
        self._ids = snap.ids
        reward, goal = 0.0, ""
        if snap.score is not None:
            done, raw, _reason, goal = snap.score
            if isinstance(goal, dict):  # the natural-language tasks: {"utterance", "fields"}
                goal = str(goal.get("utterance", ""))
            if done and not self._done:
                reward, self._done = float(raw or 0.0), True
        self._state.url = snap.url
        self._state.total_reward += reward
        truncated = not self._done and self._state.step_count >= self._options.max_steps
        if truncated:
            self._done = True
        shot = (
            await self._guard(page.screenshot(type="png"), "a screenshot")
            if self._options.screenshot
            else None
        )
        return BrowserObservation(
            text=snap.text,
            goal=goal or "",
            url=snap.url,
            title=snap.title,
            task_id=self._task.task_id,
            last_action_error=error,
            screenshot=shot,
            reward=reward if count_step else 0.0,
            done=self._done,
            truncated=truncated,
        )

    # --- failure handling -------------------------------------------------------------

    async def _guard(self, call: Awaitable[T], what: str, timeout_s: float | None = None) -> T:
        """Await a page call; a page silent past the hang timeout, or crashed, ends the session."""
        from playwright.async_api import Error as PlaywrightError

        limit = timeout_s or self._config.hang_timeout_s
        try:
            async with asyncio.timeout(limit):  # no extra task, unlike wait_for
                return await call
        except TimeoutError:
            await self._end(f"the page did not answer ({what}) within {limit:g} s: it is hung")
        except PlaywrightError:
            if self._crashed:
                await self._end("the page's renderer crashed")
            if self._page is not None and self._page.is_closed():
                await self._end("the page was closed under it (the browser exited?)")
            raise
        raise AssertionError("unreachable")

    def _on_crash(self, _page: Any) -> None:
        self._crashed = True

    async def _end(self, why: str) -> None:
        """Give up on this session: free its context and raise SessionClosed (now and later)."""
        self._ended = f"browser session ended: {why}"
        log.warning("%s (task %s)", self._ended, self._task.task_id or "-")
        await self._close_context()
        raise SessionClosed(self._ended)

    def _check_alive(self) -> None:
        if self._ended is not None:
            raise SessionClosed(self._ended)
        if self._crashed:
            self._ended = "browser session ended: the page's renderer crashed"
            raise SessionClosed(self._ended)

    # --- helpers -----------------------------------------------------------------------

    def _parse_options(self, options: Any) -> BrowserResetOptions:
        if isinstance(options, BrowserResetOptions):
            return options
        try:
            return BrowserResetOptions.model_validate(options or {})
        except ValidationError as exc:
            raise ValidationFailed(
                f"bad reset options: {exc}", errors=exc.errors(include_url=False, include_context=False)
            ) from None

    async def _get_host(self) -> BrowserHost:
        if self._host is not None:
            return self._host
        if self._own_host is None:
            self._own_host = await BrowserHost(self._config).__aenter__()
        return self._own_host

    async def _fresh_page(self, host: BrowserHost) -> Any:
        """The session's page, its cookies and storage cleared; made on the first reset.

        One context per session for its whole life: a new renderer per episode would
        cost more than the episode's own work. The page is reloaded every reset.
        """
        if self._page is None:
            self._context = await host.new_context()
            self._page = await self._context.new_page()
            self._page.on("crash", self._on_crash)
            self._page.set_default_timeout(self._config.action_timeout_s * 1000)
            self._page.set_default_navigation_timeout(self._config.load_timeout_s * 1000)
            return self._page
        await self._guard(self._context.clear_cookies(), "clearing cookies")
        if host.allows(self._page.url) and self._page.url != "about:blank":
            await self._guard(self._page.evaluate(_CLEAR_STORAGE_JS), "clearing storage")
        return self._page

    async def _close_context(self) -> None:
        context, self._context, self._page = self._context, None, None
        if context is not None:
            try:
                await asyncio.wait_for(context.close(), self._config.hang_timeout_s)
            except Exception:
                log.warning("closing a browser context failed", exc_info=True)
