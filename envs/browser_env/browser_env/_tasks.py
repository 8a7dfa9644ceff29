"""MiniWoB++ tasks: the pages ship in the ``miniwob`` wheel and are served locally.

A task is chosen at reset as ``openenv.tasks.TaskSet.pick`` chooses one: by
``task_id`` (any page name, e.g. ``click-test``), else by ``index`` into a split, else
drawn from the seed. Two splits: ``"default"`` (``SEEDED_TASKS``, the tasks the element
actions can solve: no drawing or dragging) and ``"all"`` (every page, sorted). The
list is built in, so no ``datasets`` is needed for 130 names.

The page's own JavaScript generates the problem from the seed (``Math.seedrandom``)
and scores the episode; the env reports the raw score (1.0 solved, below that partly
or not, -1.0 wrong) without MiniWoB's time discount.
"""

from __future__ import annotations

import importlib.util
import json
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from openenv import TaskNotFound

#: Tasks drawn from the seed when the reset names none; all are solvable with element actions.
SEEDED_TASKS: tuple[str, ...] = (
    "choose-list",
    "click-button",
    "click-button-sequence",
    "click-checkboxes",
    "click-collapsible",
    "click-dialog",
    "click-dialog-2",
    "click-link",
    "click-option",
    "click-tab",
    "click-test",
    "click-test-2",
    "enter-password",
    "enter-text",
    "enter-text-2",
    "focus-text",
    "focus-text-2",
    "login-user",
    "navigate-tree",
    "use-spinner",
)

#: What the page says about the episode: [done, raw reward, reason, instruction], or null.
SCORE_JS = (
    "typeof WOB_DONE_GLOBAL === 'undefined' ? null : "
    "[WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL, WOB_REWARD_REASON, core.getUtterance()]"
)

#: Tasks whose page may draw an instance a random agent solves by luck: the selector
#: of the candidates it offers, one or more of them named by the instruction's quoted
#: text. An instance is fair when a random pick among its candidates wins at most one
#: time in four. MiniWoB's click-button draws one to six buttons and click-link one
#: link or more, and every candidate labelled as asked wins: with one any click solves
#: it, with two a random click does half the time (issue 33: the random policy scored
#: 1.0 on a two-button page).
CANDIDATES: dict[str, str] = {
    "click-button": "#area button",
    "click-link": "#area .alink",
}

_FAIR_JS = (
    "(() => { const asked = /\"(.*)\"/.exec(document.querySelector('#query').textContent);"
    " const all = [...document.querySelectorAll(SELECTOR)];"
    " const wins = all.filter(e => asked && e.innerHTML === asked[1]).length;"
    " return wins >= 1 && 4 * wins <= all.length; })()"
)

#: Instances drawn at most for one reset, looking for a fair one (about 1 in 10 is).
MAX_DRAWS = 256

#: Seed the page's random numbers, set its clock, start the episode; where the task
#: has a fairness test, start it again under the next seed until an instance passes.
_START_JS = """([seeds, limitMs]) => {
  core.EPISODE_MAX_TIME = limitMs;
  for (const seed of [].concat(seeds)) {
    Math.seedrandom(String(seed));
    core.startEpisodeReal();
    if (FAIR) break;
  }
  return WOB_TASK_READY;
}"""


def start_js(task_id: str) -> str:
    """The script that starts ``task_id``'s episode (called with ``[seeds, limitMs]``;
    ``seeds`` a list, or one seed)."""
    selector = CANDIDATES.get(task_id)
    fair = "true" if selector is None else _FAIR_JS.replace("SELECTOR", json.dumps(selector))
    return _START_JS.replace("FAIR", fair)


#: The start script of a task without a fairness test (also takes one seed).
START_JS = start_js("")

#: Not shown to the agent: MiniWoB's score display, click marks and start cover.
EXCLUDE_SELECTOR = "#reward-display, #click-canvas, #sync-task-cover"


class NoSuchTask(TaskNotFound):
    """No such task id, index or split (TASK_NOT_FOUND, as every task set answers)."""


@dataclass(frozen=True, slots=True)
class Task:
    """One MiniWoB page and the seed its problem is generated from."""

    task_id: str
    seed: int

    def page_seeds(self) -> list[int]:
        """The seeds the page draws its instance from: ``seed`` first, then more from
        it, for a task whose instances must be fair (``CANDIDATES``) (the same each time)."""
        if self.task_id not in CANDIDATES:
            return [self.seed]
        rng = random.Random(self.seed)
        return [self.seed, *(rng.randrange(2**31) for _ in range(MAX_DRAWS - 1))]

    @property
    def path(self) -> str:
        """The page's path on the task server."""
        return f"/miniwob/{self.task_id}.html"


@cache
def pages_root() -> Path:
    """The ``html`` folder inside the installed ``miniwob`` wheel."""
    # Only the wheel's pages are used, never its Python code (which pulls in gymnasium).
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the 'miniwob' package is not installed: pip install miniwob==1.1.0")
    root = Path(next(iter(spec.submodule_search_locations))) / "html"
    if not (root / "core" / "core.js").is_file():
        raise FileNotFoundError(f"no MiniWoB pages under {root}: reinstall the 'miniwob' package")
    return root


@cache
def task_ids() -> frozenset[str]:
    """Every MiniWoB task in the wheel (about 130)."""
    return frozenset(p.stem for p in (pages_root() / "miniwob").glob("*.html"))


def split(name: str | None) -> tuple[str, ...]:
    """The task ids of a split (``None``: ``"default"``)."""
    if name in (None, "default"):
        return SEEDED_TASKS
    if name == "all":
        return tuple(sorted(task_ids()))
    raise NoSuchTask(f"no split {name!r}; splits: default, all", split=name, splits=["default", "all"])


def choose(
    task_id: str | None, index: int | None = None, split_name: str | None = None, seed: int | None = None
) -> Task:
    """The task for a reset, and the seed its page generates the problem from."""
    rng = random.Random(seed)
    if task_id is not None:
        if task_id not in task_ids():
            near = sorted(t for t in task_ids() if task_id.split("-")[0] in t)[:5]
            hint = f"; similar: {', '.join(near)}" if near else ""
            raise NoSuchTask(f"no MiniWoB task {task_id!r}{hint}", task_id=task_id)
    else:
        ids = split(split_name)
        if index is not None and index >= len(ids):
            raise NoSuchTask(f"index {index} is past the {len(ids)} tasks of the split", index=index)
        task_id = ids[index] if index is not None else ids[rng.randrange(len(ids))]
    return Task(task_id, rng.randrange(2**31))
