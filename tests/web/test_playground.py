"""The playground in headless Chromium (Playwright on Debian's /usr/bin/chromium):
load it, fill the form generated from a tagged-union action, reset, step, and see the
observation, reward, breakdown, image and history. The screenshot is kept as a test
artifact in ``$OPENENV_TEST_ARTIFACTS`` (default ``build/test-artifacts/``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .._chromium import headless_chromium, page_of
from ._playground_env import CanvasEnv

ARTIFACTS = Path(os.environ.get("OPENENV_TEST_ARTIFACTS") or Path(__file__).resolve().parents[2] / "build" /
                 "test-artifacts")


@pytest.fixture(scope="module")
def browser():
    with headless_chromium() as chromium:
        yield chromium


@pytest.fixture
def page(browser):
    with page_of(browser, viewport={"width": 1200, "height": 950}) as page:
        yield page


def rows(page) -> int:
    return page.locator("#history tbody tr").count()


@pytest.mark.timeout(90)
def test_drive_an_episode_in_the_browser(serve, page):
    server = serve(CanvasEnv)
    page.goto(f"{server.url}/web")
    page.wait_for_selector("#status.ok", timeout=15000)
    assert page.inner_text("#env-name") == "CanvasEnv"

    # the tagged union: a select of its branches, the first one's fields shown
    union = page.locator("select[data-union=cmd]")
    assert union.locator("option").all_inner_texts() == ["move", "paint"]
    assert page.locator("#action-fields input[name=dx]").get_attribute("min") == "-3"

    page.fill("#reset-seed", "5")
    page.fill("#reset-fields input[name=start_x]", "3")  # a form from the reset options schema
    page.click("#reset-button")
    page.wait_for_selector("#step-button:not([disabled])")
    assert rows(page) == 1

    page.fill("#action-fields input[name=dx]", "2")
    page.click("#step-button")
    page.wait_for_function("document.querySelectorAll('#history tbody tr').length === 2")
    assert page.inner_text("#reward") == "0.2"
    assert '"x": 5' in page.inner_text("#observation")

    union.select_option(label="paint")
    page.select_option("select[name=color]", label="blue")
    page.fill("input[name=label]", "sky")
    assert '"kind": "paint"' in page.input_value("#action-json")
    assert '"size": 1' in page.input_value("#action-json")  # a required number starts at its minimum
    page.click("#step-button")
    page.wait_for_function("document.querySelectorAll('#history tbody tr').length === 3")

    observation = page.inner_text("#observation")
    assert '"color": "blue"' in observation
    assert '"label": "sky"' in observation
    assert "<image" in observation  # the base64 PNG is shown as an image, not as text
    assert page.inner_text("#reward") == "1"
    breakdown = page.inner_text("#breakdown-table").split()
    assert breakdown == ["reward", "part", "value", "movement", "0", "paint", "1"]
    image = page.locator("#images img")
    assert image.count() == 1
    assert image.evaluate("img => img.complete && img.naturalWidth") == 24
    assert page.locator("#history tbody tr").nth(2).inner_text().startswith('2\t{"cmd":{"kind":"paint"')

    page.click("#state-button")
    page.wait_for_function("document.getElementById('state').textContent.includes('step_count')")
    assert '"step_count": 2' in page.inner_text("#state")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "playground.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert page.errors == []


@pytest.mark.timeout(90)
def test_errors_are_shown_and_the_session_survives(serve, page):
    server = serve(CanvasEnv)
    page.goto(f"{server.url}/web/")
    page.wait_for_selector("#status.ok", timeout=15000)
    page.click("#reset-button")
    page.wait_for_selector("#step-button:not([disabled])")
    page.click("#raw-box summary")
    page.check("#use-raw")
    page.fill("#action-json", '{"cmd": {"kind": "jump"}}')
    page.click("#step-button")
    page.wait_for_function("document.getElementById('error').textContent.length > 0")
    assert page.inner_text("#error").startswith("VALIDATION_ERROR")
    page.uncheck("#use-raw")
    page.click("#step-button")
    page.wait_for_function("document.querySelectorAll('#history tbody tr').length === 2")
    assert page.inner_text("#error") == ""
