"""Helpers for the browser env tests: a real server in-process, and scripted policies.

``BrowserServer`` runs ``create_app(BrowserEnv)`` under uvicorn (uvloop, as
``openenv serve`` does) in a thread whose event loop the tests can reach: the env's
Playwright objects live on that loop, so a test that pokes a session's page (to hang
or crash it, or to set a cookie) runs a coroutine there with ``on_loop``.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvicorn
from browser_env import (
    BrowserEnv,
    BrowserObservation,
    ClickAction,
    FillAction,
    PressAction,
    SelectAction,
)

from openenv.server import ServerSettings, create_app
from openenv.server._serve import uvicorn_options

CHROMIUM = "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="no Chromium at /usr/bin/chromium: run scripts/setup.d/30-browser.sh (apt-get install chromium)",
)


class BrowserServer:
    """A live server for ``BrowserEnv`` on 127.0.0.1 with its loop exposed."""

    def __init__(self, **env_kwargs: Any) -> None:
        settings = ServerSettings.from_env(env_kwargs=env_kwargs, idle_timeout_s=0, call_timeout_s=60.0)
        self.app = create_app(BrowserEnv, settings=settings)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        options = uvicorn_options(settings)
        options.update(host="127.0.0.1", port=self.port, timeout_graceful_shutdown=3)
        self.server = uvicorn.Server(uvicorn.Config(self.app, **options))
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=self._run, name="browser-test-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        import uvloop

        self.loop = uvloop.new_event_loop()
        self.loop.run_until_complete(self.server.serve(sockets=[self._sock]))

    def start(self, timeout_s: float = 30.0) -> BrowserServer:
        self._sock.listen(64)
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("browser test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self._sock.close()

    def envs(self) -> list[Any]:
        """The live sessions' env objects."""
        return [s._handle.env for s in list(self.app.state.sessions.sessions.values())]

    def env_of(self, episode_id: str) -> Any:
        """The env whose current episode has this id."""
        for env in self.envs():
            if env._state.episode_id == episode_id:
                return env
        raise LookupError(f"no session runs episode {episode_id!r}")

    def on_loop(self, make: Callable[[], Coroutine[Any, Any, Any]], timeout_s: float = 10.0) -> Any:
        """Run a coroutine on the server's loop (where the env's Playwright objects live)."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(make(), self.loop).result(timeout_s)


# --- scripted policies: read the observation text, pick actions -------------------------

_LINE = re.compile(r'^\s*\[(\d+)\] (\S+) "((?:[^"\\]|\\.)*)"(.*)$')


def elements(obs: BrowserObservation) -> list[tuple[int, str, str, str]]:
    """``(id, role, name, rest)`` for every line of the observation text."""
    found = []
    for line in obs.text.splitlines():
        m = _LINE.match(line)
        if m:
            found.append((int(m[1]), m[2], m[3].replace('\\"', '"'), m[4]))
    return found


def find(obs: BrowserObservation, role: str, name: str | None = None) -> list[int]:
    """Ids of the elements with this role (and this exact name)."""
    return [i for i, r, n, _ in elements(obs) if r == role and (name is None or n == name)]


def quoted(goal: str) -> list[str]:
    """The quoted strings of an instruction."""
    return re.findall(r'"([^"]*)"', goal)


def _after_label(obs: BrowserObservation, label: str) -> int:
    """The textbox right after the label with this text."""
    items = elements(obs)
    for k, (_, role, name, _) in enumerate(items):
        if role == "label" and name == label:
            return next(i for i, r, _, _ in items[k + 1 :] if r == "textbox")
    raise LookupError(f"no label {label!r}")


Policy = Callable[[BrowserObservation], list[Any]]


def solve_click_test(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "button", "Click Me!")[0])]


def solve_click_test_2(obs: BrowserObservation) -> list[Any]:
    word = re.search(r"Click button (\w+)\.", obs.goal)
    assert word is not None
    return [ClickAction(id=find(obs, "button", word[1])[0])]


def solve_click_button(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "button", quoted(obs.goal)[0])[0])]


def solve_click_link(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "link", quoted(obs.goal)[0])[0])]


def solve_click_dialog(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "button", "Close")[0])]


def solve_click_button_sequence(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "button", "ONE")[0]), ClickAction(id=find(obs, "button", "TWO")[0])]


def solve_enter_text(obs: BrowserObservation) -> list[Any]:
    box = find(obs, "textbox")[0]
    return [FillAction(id=box, text=quoted(obs.goal)[0]), ClickAction(id=find(obs, "button", "Submit")[0])]


def solve_enter_password(obs: BrowserObservation) -> list[Any]:
    word = quoted(obs.goal)[0]
    boxes = find(obs, "textbox")
    submit = ClickAction(id=find(obs, "button", "Submit")[0])
    return [FillAction(id=boxes[0], text=word), FillAction(id=boxes[1], text=word), submit]


def solve_login_user(obs: BrowserObservation) -> list[Any]:
    user, password = quoted(obs.goal)[:2]
    return [
        FillAction(id=_after_label(obs, "Username"), text=user),
        FillAction(id=_after_label(obs, "Password"), text=password),
        PressAction(id=_after_label(obs, "Password"), key="Tab"),
        ClickAction(id=find(obs, "button", "Login")[0]),
    ]


def solve_click_checkboxes(obs: BrowserObservation) -> list[Any]:
    m = re.search(r"Select (.*) and click Submit", obs.goal)
    assert m is not None
    wanted = set() if m[1] == "nothing" else set(m[1].split(", "))
    boxes = [ClickAction(id=i) for i, r, n, _ in elements(obs) if r == "checkbox" and n in wanted]
    return [*boxes, ClickAction(id=find(obs, "button", "Submit")[0])]


def solve_click_option(obs: BrowserObservation) -> list[Any]:
    m = re.search(r"Select (.*) and click Submit", obs.goal)
    assert m is not None
    return [ClickAction(id=find(obs, "radio", m[1])[0]), ClickAction(id=find(obs, "button", "Submit")[0])]


def solve_choose_list(obs: BrowserObservation) -> list[Any]:
    m = re.search(r"Select (.*) from the list", obs.goal)
    assert m is not None
    return [SelectAction(id=find(obs, "combobox")[0], option=m[1]), ClickAction(id=find(obs, "button")[-1])]


def solve_focus_text(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "textbox")[0])]


POLICIES: dict[str, Policy] = {
    "click-test": solve_click_test,
    "click-test-2": solve_click_test_2,
    "click-button": solve_click_button,
    "click-link": solve_click_link,
    "click-dialog": solve_click_dialog,
    "click-button-sequence": solve_click_button_sequence,
    "enter-text": solve_enter_text,
    "enter-password": solve_enter_password,
    "login-user": solve_login_user,
    "click-checkboxes": solve_click_checkboxes,
    "click-option": solve_click_option,
    "choose-list": solve_choose_list,
    "focus-text": solve_focus_text,
}
