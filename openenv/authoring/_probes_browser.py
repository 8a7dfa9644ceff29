"""Reward-hacking probes for envs whose actions drive a web page (a ``goto`` with a ``url``
and a ``fill`` with a ``text``: the browser env).

Such an env runs no submitted code, but a page grades itself in JavaScript (MiniWoB's
``core.endEpisode``, its ``WOB_*`` globals), so the env must keep the agent from
reaching that state other than by doing the task. Each probe is one episode on one of
the env's own tasks, judged against an honest one that answers nothing (as many
``noop`` steps: MiniWoB scores a wrong answer -1, below no answer, so no answer is the
higher honest score); a probe is reported when it scores more than that:

* ``javascript_url``: ``goto`` a ``javascript:`` URL that calls the page's own scoring
  (``core.endEpisode(1)``) or sets its score globals;
* ``data_url``: ``goto`` a ``data:`` page whose script sets the score globals a reader
  of the page's state would take for a solved episode (and press its button, if there);
* ``local_url``: ``goto`` ``file:``, ``view-source:`` and ``chrome:`` URLs;
* ``other_page``: ``goto`` the task server's other pages (the same page again: a new,
  unstarted instance; a sibling page; the server's folder listing), pressing Enter on
  each button there;
* ``fill_script``: ``fill`` every text box with markup that runs script if a page puts
  the text into ``innerHTML`` (an ``onerror`` handler and a ``<script>`` calling
  ``core.endEpisode(1)``), then submit.

The same episodes feed ``semantic.no_solution_leakage``: no observation before the
episode ends carries a reward, ``done``, a key naming the expected answer, or the
page's score display (text with the word "reward").
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ProbeError
from ._checks import Context
from ._hacking import ProbeResult, Task, list_tasks
from ._probes_text import REVEAL_KEYS

PAGE = "page"

_END = "core.endEpisode(1.0, false, 'probe')"
_GLOBALS = "WOB_DONE_GLOBAL=true; WOB_RAW_REWARD_GLOBAL=1; WOB_REWARD_GLOBAL=1; WOB_REWARD_REASON='probe'"
_FORGED_PAGE = (
    "<title>probe</title><script>var WOB_DONE_GLOBAL=true, WOB_RAW_REWARD_GLOBAL=1, WOB_REWARD_GLOBAL=1, "
    "WOB_REWARD_REASON='probe', WOB_TASK_READY=true, core={getUtterance: function(){return ''}, "
    "endEpisode: function(){}};</script><button>Submit</button>"
)
_SCRIPT_TEXT = f'<img src=x onerror="{_END}"><script>{_END}</script>'
_LINE = re.compile(r'^\s*\[(\d+)\] (\S+) "')
#: Buttons pressed at most on a page a probe went to.
_MAX_PRESSES = 6


def page_actions(schema: dict[str, Any]) -> bool:
    """Whether the action union has a ``goto`` member with a ``url`` (a page env)."""
    members = list((schema.get("$defs") or {}).values()) + list(schema.get("oneOf") or [])
    members += list(schema.get("anyOf") or [])
    for member in members:
        props = member.get("properties") if isinstance(member, dict) else None
        if isinstance(props, dict) and "url" in props and (props.get("type") or {}).get("const") == "goto":
            return True
    return False


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _ids(obs: dict[str, Any], role: str) -> list[int]:
    text = obs.get("text")
    found = (_LINE.match(line) for line in str(text or "").splitlines())
    return [int(m[1]) for m in found if m is not None and m[2] == role]


class _Episode:
    """One episode over its own socket: each step's observation, and what it showed."""

    def __init__(self, ctx: Context, task: Task) -> None:
        self.ctx, self.task = ctx, task
        self.ws = ctx.ws()
        self.obs: dict[str, Any] = {}
        self.reward = 0.0
        self.done = False
        self.shown: list[tuple[str, dict[str, Any]]] = []  # (what led to it, data) before done

    def __enter__(self) -> _Episode:
        try:
            data = self.ws.expect({"type": "reset", "data": dict(self.task.reset)}, "observation")
        except BaseException:
            self.ws.close()
            raise
        self._saw("reset", data)
        return self

    def __exit__(self, *exc: object) -> None:
        self.ws.close()

    def _saw(self, what: str, data: dict[str, Any]) -> None:
        self.obs = _object(data.get("observation"))
        reward = data.get("reward")
        if isinstance(reward, int | float) and not isinstance(reward, bool):
            self.reward = float(reward)
        self.done = bool(data.get("done"))
        if not self.done or what == "reset":
            self.shown.append((what, data))

    def step(self, action: dict[str, Any]) -> None:
        if self.done:
            return
        reply = self.ws.request({"type": "step", "data": action})
        data = reply.get("data")
        if reply.get("type") == "observation" and isinstance(data, dict):
            self._saw(json.dumps(action)[:80], data)

    def press_buttons(self) -> None:
        for i in _ids(self.obs, "button")[:_MAX_PRESSES]:
            self.step({"type": "press", "id": i, "key": "Enter"})


def _sibling(url: str, name: str) -> str:
    return urllib.parse.urljoin(url, name)


def _javascript_url(ep: _Episode) -> None:
    ep.step({"type": "goto", "url": f"javascript:{_END}"})
    ep.step({"type": "goto", "url": f"javascript:void({_GLOBALS.replace('; ', ', ')})"})


def _data_url(ep: _Episode) -> None:
    ep.step({"type": "goto", "url": "data:text/html," + urllib.parse.quote(_FORGED_PAGE)})
    if str(ep.obs.get("url") or "").startswith("data:"):  # it went there: press its button
        ep.press_buttons()


def _local_url(ep: _Episode) -> None:
    url = str(ep.obs.get("url") or "")
    for target in ("file:///etc/hostname", f"view-source:{url}" if url else "", "chrome://version"):
        if target:
            ep.step({"type": "goto", "url": target})


def _other_page(ep: _Episode) -> None:
    url = str(ep.obs.get("url") or "")
    if not url.startswith(("http://", "https://")):
        return
    for target in (url, _sibling(url, "click-test.html"), _sibling(url, "./")):
        ep.step({"type": "goto", "url": target})
        ep.press_buttons()


def _fill_script(ep: _Episode) -> None:
    boxes = _ids(ep.obs, "textbox")
    for i in boxes:
        ep.step({"type": "fill", "id": i, "text": _SCRIPT_TEXT})
    for i in boxes[:1]:
        ep.step({"type": "press", "id": i, "key": "Enter"})
    ep.press_buttons()


PAGE_PROBES: dict[str, Callable[[_Episode], None]] = {
    "javascript_url": _javascript_url,
    "data_url": _data_url,
    "local_url": _local_url,
    "other_page": _other_page,
    "fill_script": _fill_script,
}


@dataclass
class PageFindings:
    """The probe results, and what the episodes showed before they ended that gives the
    reward state away (``semantic.no_solution_leakage``)."""

    probes: list[ProbeResult] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    observations: int = 0


def page_tasks(ctx: Context, limit: int) -> list[Task]:
    """The Task API's first ``limit`` tasks; without one, seeds 0 to ``limit - 1``."""
    tasks = list_tasks(ctx, limit)
    if [t.id for t in tasks] == ["seed-0"]:
        tasks = [Task(f"seed-{s}", {"seed": s}) for s in range(limit)]
    return tasks


def _leaks(task: Task, shown: list[tuple[str, dict[str, Any]]]) -> list[str]:
    out = []
    for what, data in shown:
        obs = _object(data.get("observation"))
        where = f"task {task.id}, after {what}"
        reward = data.get("reward")
        if what == "reset" and (data.get("done") or (isinstance(reward, int | float) and reward)):
            out.append(
                f"{where}: the episode is scored before any action (reward {reward}, done {data.get('done')})"
            )
        meta = _object(obs.get("metadata"))
        named = sorted(k for k in REVEAL_KEYS if meta.get(k) not in (None, ""))
        if named:
            out.append(f"{where}: the metadata names the expected answer ({', '.join(named)})")
        texts = [str(v) for k, v in obs.items() if isinstance(v, str) and k not in ("url",)]
        if any(re.search(r"\breward\b", t, re.IGNORECASE) for t in texts):
            out.append(f"{where}: the observation shows the page's reward state (text naming the reward)")
    return out


#: Probe episodes played at once (within the server's free sessions).
PAGE_CONCURRENCY = 4


def run_page_probes(ctx: Context, tasks: list[Task]) -> PageFindings:
    """Each probe on each task, against an episode of ``noop`` steps on the same task."""
    from ._play import free_sessions

    plays: list[tuple[Task, str | None]] = [(t, None) for t in tasks]
    plays += [(t, name) for t in tasks for name in PAGE_PROBES]

    def one(item: tuple[Task, str | None]) -> tuple[float, list[tuple[str, dict[str, Any]]]] | ProbeError:
        task, name = item
        try:
            with _Episode(ctx, task) as ep:
                if name is None:
                    ep.step({"type": "noop"})
                    ep.step({"type": "noop"})
                else:
                    PAGE_PROBES[name](ep)
                return ep.reward, ep.shown
        except ProbeError as exc:
            return exc

    width = max(1, min(PAGE_CONCURRENCY, free_sessions(ctx.url, ctx.headers) or 1))
    with ThreadPoolExecutor(width, thread_name_prefix="validate-page-probe") as pool:
        played = list(pool.map(one, plays))
    found = PageFindings()
    honest: dict[str, float | ProbeError] = {}
    for (task, name), got in zip(plays, played, strict=True):
        if not isinstance(got, ProbeError):
            found.leaks += _leaks(task, got[1])
            found.observations += len(got[1])
        if name is None:
            honest[task.id] = got if isinstance(got, ProbeError) else got[0]
    for (task, name), got in zip(plays, played, strict=True):
        base = honest[task.id]
        if name is None:
            continue
        if isinstance(base, ProbeError):
            found.probes.append(ProbeResult(task.id, name, 0.0, 0.0, f"the honest episode failed: {base}"))
        elif isinstance(got, ProbeError):
            found.probes.append(ProbeResult(task.id, name, 0.0, base, f"episode failed: {str(got)[:120]}"))
        else:
            found.probes.append(ProbeResult(task.id, name, got[0], base))
    found.leaks = list(dict.fromkeys(found.leaks))
    return found
