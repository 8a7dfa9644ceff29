"""MiniWoB++ tasks: the pages ship in the ``miniwob`` wheel and are served locally.

A task is chosen at reset by ``task_id`` (any page name, e.g. ``click-test``), or drawn
from the seed out of ``SEEDED_TASKS``: the tasks that the element actions can solve
(no drawing or dragging). The page's own JavaScript generates the problem from the
seed (``Math.seedrandom``) and scores the episode; the env reports the raw score
(1.0 solved, below that partly or not, -1.0 wrong) without MiniWoB's time discount.
"""

from __future__ import annotations

import importlib.util
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path

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

#: Seed the page's random numbers, set its clock, start the episode.
START_JS = """([seed, limitMs]) => {
  Math.seedrandom(String(seed));
  core.EPISODE_MAX_TIME = limitMs;
  core.startEpisodeReal();
  return WOB_TASK_READY;
}"""

#: Not shown to the agent: MiniWoB's score display, click marks and start cover.
EXCLUDE_SELECTOR = "#reward-display, #click-canvas, #sync-task-cover"


class UnknownTask(ValueError):
    """No MiniWoB page by that name."""


@dataclass(frozen=True, slots=True)
class Task:
    """One MiniWoB page and the seed its problem is generated from."""

    task_id: str
    seed: int

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


def choose(task_id: str | None, seed: int | None) -> Task:
    """The task for a reset: the named one, or one drawn from the seed (random without)."""
    rng = random.Random(seed)
    if task_id is None:
        task_id = rng.choice(SEEDED_TASKS)
    elif task_id not in task_ids():
        near = sorted(t for t in task_ids() if task_id.split("-")[0] in t)[:5]
        raise UnknownTask(f"no MiniWoB task {task_id!r}" + (f"; similar: {', '.join(near)}" if near else ""))
    return Task(task_id, rng.randrange(2**31))
