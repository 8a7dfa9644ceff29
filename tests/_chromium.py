"""Headless Chromium for the tests that drive a page (playwright's sync API); skipped,
saying why, where playwright or Chromium is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("OPENENV_BROWSER_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@contextmanager
def headless_chromium(*args: str) -> Iterator[Any]:
    """A launched headless Chromium (``args``: its command-line flags), closed after."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"chromium is not installed at {CHROMIUM} (scripts/setup.d/60-chromium.sh installs it)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(args))
        yield browser
        browser.close()


@contextmanager
def page_of(browser: Any, **context: Any) -> Iterator[Any]:
    """A new page in a fresh context (``context``: its options, e.g. ``viewport``); its
    uncaught script errors collect in ``page.errors``."""
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    try:
        yield page
    finally:
        ctx.close()
