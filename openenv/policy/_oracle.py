"""``oracle``: play the task's reference solution, where the env ships one.

A solution is found from the task's data (what the env's Task API serves) by the
first ``SolutionSource`` that knows it:

* ``solution`` (a string) with a ``code`` + ``submit`` action (the coding env):
  submit the reference code;
* ``path`` of a Harbor task folder with ``solution/solve.sh`` readable here (the
  terminal env; the env served from a folder or an installed name on this machine):
  run the script in the session's shell, then submit;
* a plan the env's manifest names (``validation.capabilities.oracle``, ``form:
  script``, ``location: MODULE:FUNCTION`` or ``FILE.py:FUNCTION`` relative to the
  ``openenv.yaml``): ``plan(first_observation) -> actions`` (None: no solution for
  this task), for solutions that read what the env shows (the browser env's scripted
  MiniWoB solutions, ``browser_env.solutions:reference_plan``) or that need no task
  (echo's longest message). ``plan_for`` finds it: declared by the validator
  (``declare_plan``), or read from the ``openenv.yaml`` beside the env's installed
  package (an env served by name, folder or URL, whose package is importable here).

A task with none is an error in its trajectory (``NoSolution``), never a zero. Add a
source with ``OraclePolicy(sources=[..., my_source])``; a source may return a plan too.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._exceptions import PolicyError
from ._base import Agent, Decision, Episode, Policy

#: ``source(episode)`` -> the actions of the reference solution, or None.
SolutionSource = Callable[[Episode], "list[dict[str, Any]] | Plan | None"]
#: ``plan(first_observation)`` -> the actions (None: no solution for this task), for
#: solutions that read the page or screen.
Plan = Callable[[Mapping[str, Any]], "list[dict[str, Any]] | None"]


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


def declared_plan(episode: Episode) -> Plan | None:
    """The plan the env's manifest names (``plan_for``), for every task."""
    return plan_for(episode.env)


#: ``MODULE:FUNCTION`` or ``FILE.py:FUNCTION`` (relative to the manifest's folder).
_PLAN_LOCATION = re.compile(r"^(?P<target>[A-Za-z_][\w.]*|[\w./-]+\.py):(?P<function>[A-Za-z_]\w*)$")
_ENTRY_POINTS = "openenv.envs"  # openenv.server._serve.ENTRY_POINT_GROUP, without importing the server
#: Env name -> its manifest-named plan (None: none found), once looked up or declared.
_PLANS: dict[str, Plan | None] = {}
_PLANS_LOCK = threading.Lock()


def is_plan_location(location: str) -> bool:
    """Whether ``capabilities.oracle.location`` names a plan (``MODULE:FUNCTION`` or
    ``FILE.py:FUNCTION``) rather than a file to run (a Harbor ``solution/solve.sh``)."""
    return _PLAN_LOCATION.match(location) is not None


def load_plan(location: str, folder: Path) -> Plan:
    """The function ``location`` names; ``folder`` is the manifest's (a ``FILE.py`` is
    relative to it; a module not importable here is imported from it)."""
    m = _PLAN_LOCATION.match(location)
    if m is None:
        raise PolicyError(
            f"capabilities.oracle.location {location!r} is not MODULE:FUNCTION or FILE.py:FUNCTION"
        )
    target, name = m["target"], m["function"]
    try:
        if target.endswith(".py"):
            path = (folder / target).resolve()
            spec = importlib.util.spec_from_file_location(f"_openenv_oracle_{path.stem}", path)
            if spec is None or spec.loader is None or not path.is_file():
                raise PolicyError(f"capabilities.oracle.location: no file {path}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            if importlib.util.find_spec(target.split(".")[0]) is None and str(folder) not in sys.path:
                sys.path.append(str(folder))
            module = importlib.import_module(target)
    except (ImportError, OSError, SyntaxError) as exc:
        raise PolicyError(f"capabilities.oracle.location {location!r} cannot be loaded: {exc}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise PolicyError(f"capabilities.oracle.location {location!r}: {target} has no function {name!r}")
    return fn  # type: ignore[no-any-return]


def declare_plan(env: str, location: str, folder: Path) -> Plan:
    """Load the plan a manifest names and use it for ``env`` (what ``openenv validate``
    does with the folder it validates)."""
    plan = load_plan(location, folder)
    with _PLANS_LOCK:
        _PLANS[env] = plan
    return plan


def plan_for(env: str) -> Plan | None:
    """The plan declared for ``env``, else the one named by the manifest beside its
    installed package (looked up once); None without one."""
    with _PLANS_LOCK:
        if env in _PLANS:
            return _PLANS[env]
    found = _manifest_location(env)
    plan = load_plan(*found) if found is not None else None
    with _PLANS_LOCK:
        return _PLANS.setdefault(env, plan)


def _manifest_location(env: str) -> tuple[str, Path] | None:
    """(location, folder) of the plan the manifest named ``env`` declares."""
    try:  # the authoring extra's; without it no manifest is read
        yaml: Any = importlib.import_module("yaml")
    except ImportError:
        return None
    for folder in _package_folders(env):
        manifest = folder / "openenv.yaml"
        try:
            data = yaml.safe_load(manifest.read_text()) if manifest.is_file() else None
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(data, dict) or data.get("name") != env:
            continue
        caps = (data.get("validation") or {}).get("capabilities") or {}
        oracle = caps.get("oracle") if isinstance(caps, dict) else None
        location = oracle.get("location") if isinstance(oracle, dict) else None
        if isinstance(location, str) and is_plan_location(location):
            return location, folder
    return None


def _package_folders(env: str) -> Iterator[Path]:
    """The folders of the packages that may be ``env``'s (the one named so, and each
    installed env's), and their parents: where an env folder keeps ``openenv.yaml``."""
    tops = [env] + [
        ep.value.split(":")[0].split(".")[0] for ep in importlib.metadata.entry_points(group=_ENTRY_POINTS)
    ]
    for top in dict.fromkeys(tops):
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.origin or not spec.submodule_search_locations:
            continue
        package = Path(spec.origin).parent
        yield package
        yield package.parent


SOURCES: tuple[SolutionSource, ...] = (coding_solution, harbor_solution, declared_plan)


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
        return _Script(self.solution(episode), episode)


class _Script(Agent):
    def __init__(self, actions: list[dict[str, Any]] | Plan, episode: Episode) -> None:
        self.plan = actions if callable(actions) else None
        self.actions = [] if callable(actions) else list(actions)
        self.episode = episode

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        if self.plan is not None:  # the first observation decides the whole solution
            planned, self.plan = self.plan(observation), None
            if planned is None:
                raise NoSolution(
                    f"task {self.episode.task_id!r} of {self.episode.env} has no reference solution "
                    "the oracle can play (the env's reference plan has none for what it shows)"
                )
            self.actions = list(planned)
        return Decision(self.actions.pop(0) if self.actions else None)
