"""What one step does to a page: apply an action, then read the page back.

Actions address elements by the ``data-oe-id`` the snapshot script gave them. Every
Playwright error an action raises becomes the observation's ``last_action_error``;
only a page that stops answering (hung) or whose renderer died ends the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from .models import (
    ClickAction,
    FillAction,
    GotoAction,
    HoverAction,
    NoopAction,
    PressAction,
    ScrollAction,
    SelectAction,
)


@cache
def snapshot_js() -> str:
    return resources.files(__package__).joinpath("snapshot.js").read_text(encoding="utf-8")


@dataclass(slots=True)
class Snapshot:
    """One reading of the page."""

    text: str
    title: str
    url: str
    score: list[Any] | None
    ids: frozenset[int]


async def read(page: Any, root: str | None, exclude: str | None, score_js: str | None) -> Snapshot:
    """The accessibility text (of ``root`` less ``exclude``), title, URL and the task's
    score, in one round trip."""
    got = await page.evaluate(snapshot_js(), [root, exclude, score_js])
    text = got["text"]
    ids = frozenset(int(line[line.index("[") + 1 : line.index("]")]) for line in text.splitlines())
    return Snapshot(text, got["title"], got["url"], got["score"], ids)


_OPTION_INDEX_JS = """(el, o) => el.tagName !== "SELECT" ? null
  : [...el.options].findIndex(x => x.value === o || x.label === o || x.text.trim() === o)"""


def _element(page: Any, element_id: int) -> Any:
    return page.locator(f'[data-oe-id="{element_id}"]').first


async def apply(page: Any, action: Any, timeout_ms: float) -> None:
    """Do one element action (not goto or noop). Raises Playwright's errors as they come."""
    match action:
        case ClickAction(id=i):
            await _element(page, i).click(timeout=timeout_ms)
        case FillAction(id=i, text=text):
            await _element(page, i).fill(text, timeout=timeout_ms)
        case PressAction(id=None, key=key):
            await page.keyboard.press(key)
        case PressAction(id=int(i), key=key):
            await _element(page, i).press(key, timeout=timeout_ms)
        case SelectAction(id=i, option=option):
            element = _element(page, i)
            index = await element.evaluate(_OPTION_INDEX_JS, option, timeout=timeout_ms)
            if index is None:
                raise ValueError(f"element [{i}] is not a <select>")
            if index < 0:
                raise ValueError(f"element [{i}] has no option {option!r} (by value or label)")
            await element.select_option(index=index, timeout=timeout_ms)
        case ScrollAction(id=None, dx=dx, dy=dy):
            await page.evaluate("([dx, dy]) => window.scrollBy(dx, dy)", [dx, dy])
        case ScrollAction(id=int(i), dx=dx, dy=dy):
            await _element(page, i).evaluate(
                "(el, [dx, dy]) => el.scrollBy(dx, dy)", [dx, dy], timeout=timeout_ms
            )
        case HoverAction(id=i):
            await _element(page, i).hover(timeout=timeout_ms)
        case GotoAction() | NoopAction():
            raise TypeError(f"{type(action).__name__} is not an element action")
        case _:
            raise TypeError(f"unknown browser action {type(action).__name__}")


def error_text(exc: BaseException) -> str:
    """Playwright's message without its call log: one or two lines for the agent."""
    first = str(exc).split("\nCall log:")[0].strip()
    return first[:500] or type(exc).__name__
