"""``oracle``: play the task's reference solution, where the env ships one.

A solution is found from the task's data (what the env's Task API serves) by the
first ``SolutionSource`` that knows it:

* ``solution`` (a string) with a ``code`` + ``submit`` action (the coding env):
  submit the reference code;
* ``path`` of a Harbor task folder with ``solution/solve.sh`` readable here (the
  terminal env; the env served from a folder or an installed name on this machine):
  run the script in the session's shell, then submit.

A task with none is an error in its trajectory (``NoSolution``), never a zero. Add a
source with ``OraclePolicy(sources=[..., my_source])``; a source may return a plan,
``plan(first_observation) -> actions``, for solutions that read what the env shows
(the browser env's scripted MiniWoB solutions, in its tests).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._exceptions import PolicyError
from ._base import Agent, Decision, Episode, Policy

#: ``source(episode)`` -> the actions of the reference solution, or None.
SolutionSource = Callable[[Episode], "list[dict[str, Any]] | Plan | None"]
#: ``plan(first_observation)`` -> the actions, for solutions that read the page or screen.
Plan = Callable[[Mapping[str, Any]], "list[dict[str, Any]]"]


class NoSolution(PolicyError):
    """The task has no reference solution this oracle can play."""


def coding_solution(episode: Episode) -> list[dict[str, Any]] | None:
    """A ``solution`` string, submitted as ``{"code": ..., "submit": true}``."""
    solution = episode.task.get("solution")
    props = episode.actions.schema.get("properties", {})
    if not isinstance(solution, str) or "code" not in props or "submit" not in props:
        return None
    return [{"code": solution, "submit": True}]


def harbor_solution(episode: Episode) -> list[dict[str, Any]] | None:
    """A Harbor task folder's ``solution/solve.sh``, run with bash, then ``submit``."""
    folder = episode.task.get("path")
    tools = {t.name for t in episode.actions.tools}
    if not isinstance(folder, str) or not {"run", "submit"} <= tools:
        return None
    script = Path(folder) / "solution" / "solve.sh"
    if not script.is_file():
        return None
    body = script.read_text()
    command = f"bash -s <<'__OPENENV_SOLVE__'\n{body}\n__OPENENV_SOLVE__"
    return [
        episode.actions.action_from_call("run", {"command": command, "timeout_s": 60}),
        episode.actions.action_from_call("submit", {}),
    ]


SOURCES: tuple[SolutionSource, ...] = (coding_solution, harbor_solution)


class OraclePolicy(Policy):
    """Plays each task's reference solution, action by action."""

    name = "oracle"

    def __init__(self, sources: Sequence[SolutionSource] = SOURCES) -> None:
        self.sources = tuple(sources)

    def solution(self, episode: Episode) -> list[dict[str, Any]] | Plan:
        for source in self.sources:
            actions = source(episode)
            if actions is not None:
                return actions
        raise NoSolution(
            f"task {episode.task_id!r} of {episode.env} has no reference solution the oracle can play"
        )

    def agent(self, episode: Episode) -> Agent:
        return _Script(self.solution(episode))


class _Script(Agent):
    def __init__(self, actions: list[dict[str, Any]] | Plan) -> None:
        self.plan = actions if callable(actions) else None
        self.actions = [] if callable(actions) else list(actions)

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        if self.plan is not None:  # the first observation decides the whole solution
            self.actions, self.plan = list(self.plan(observation)), None
        return Decision(self.actions.pop(0) if self.actions else None)
