"""``oracle``: play the task's reference solution, where the env ships one.

A solution is found from the task's data (what the env's Task API serves) by the
first ``SolutionSource`` that knows it:

* ``solution`` (a string) with a ``code`` + ``submit`` action (the coding env):
  submit the reference code;
* ``path`` of a Harbor task folder with ``solution/solve.sh`` readable here (the
  terminal env; the env served from a folder or an installed name on this machine):
  as Harbor's oracle agent, the ``solution/`` folder at ``/solution`` and ``solve.sh``
  run with the task's ``[solution] env`` and ``[agent] timeout_sec``, then submit;
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

import base64
import importlib
import importlib.metadata
import importlib.util
import io
import os
import re
import shlex
import sys
import tarfile
import threading
import tomllib
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


#: Where Harbor's oracle puts the task's ``solution/`` folder in the environment.
HARBOR_SOLUTION_DIR = "/solution"
#: A ``run`` command's size when the action's schema gives none (the terminal env's bound).
_COMMAND_LIMIT = 1 << 20
#: The run's wait when the task sets no ``[agent] timeout_sec`` (Harbor's: none); the
#: server caps it (the terminal env's ``max_timeout_s``).
_NO_AGENT_LIMIT_S = 86400.0
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: ``${VAR}`` or ``${VAR:-default}``: a ``[solution] env`` value read from this process's
#: environment, as Harbor reads it from its host's.
_ENV_TEMPLATE = re.compile(r"^\$\{([^}:]+)(?::-(.*))?\}$")


def harbor_solution(episode: Episode) -> list[dict[str, Any]] | None:
    """A Harbor task folder's solution, played as Harbor's oracle agent plays it: the
    whole ``solution/`` folder placed at ``/solution`` (in a sandboxed session, whose
    ``/`` is read-only, or where ``/solution`` cannot be made: a fresh folder of its own
    in ``/tmp``), ``solve.sh`` run from there in the session's working directory with
    the task's ``[solution] env`` for at most its ``[agent] timeout_sec``, then ``submit``.
    Everything goes through one ``run`` action (the folder as a base64 tar.gz in the
    command); a folder too big for the action's command is ``NoSolution``."""
    folder = episode.task.get("path")
    tools = {t.name for t in episode.actions.tools}
    if not isinstance(folder, str) or not {"run", "submit"} <= tools:
        return None
    task = Path(folder)
    script = task / "solution" / "solve.sh"
    if not script.is_file():
        return None
    timeout_s, env = _harbor_settings(episode, task)
    command = _solve_command(
        task / "solution",
        env,
        container=bool(episode.task.get("image")),
        shebang=script.read_bytes().startswith(b"#!"),
    )
    run = episode.actions.tool("run").parameters.get("properties", {})
    limit = run.get("command", {}).get("maxLength", _COMMAND_LIMIT)
    if len(command) > limit:
        raise NoSolution(
            f"task {episode.task_id!r} of {episode.env}: its solution/ folder packs to a "
            f"{len(command)}-character run command, over the {limit} the env's run action takes"
        )
    cap = run.get("timeout_s", {})
    for member in cap.get("anyOf", [cap]):
        if isinstance(member.get("maximum"), (int, float)):
            timeout_s = min(timeout_s, float(member["maximum"]))
    return [
        episode.actions.action_from_call("run", {"command": command, "timeout_s": timeout_s}),
        episode.actions.action_from_call("submit", {}),
    ]


def _harbor_settings(episode: Episode, task: Path) -> tuple[float, dict[str, str]]:
    """``[agent] timeout_sec`` and ``[solution] env`` (templates resolved) of the task's
    ``task.toml`` (the two fields only; the env reads the rest)."""
    where = f"task {episode.task_id!r} of {episode.env}: task.toml"
    try:
        with (task / "task.toml").open("rb") as f:
            meta = tomllib.load(f)
    except FileNotFoundError:
        meta = {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise NoSolution(f"{where}: {exc}") from None
    timeout = (meta.get("agent") or {}).get("timeout_sec")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
    ):
        raise NoSolution(f"{where}: [agent] timeout_sec = {timeout!r}: expected a positive number")
    table = (meta.get("solution") or {}).get("env") or {}
    if not isinstance(table, dict):
        raise NoSolution(f'{where}: [solution] env: expected a table of NAME = "value"')
    env: dict[str, str] = {}
    for name, value in table.items():
        if not _ENV_NAME.match(name) or not isinstance(value, (str, int, float)):
            raise NoSolution(f'{where}: [solution] env: {name} = {value!r} is not NAME = "value"')
        template = _ENV_TEMPLATE.match(str(value))
        if template is None:
            env[name] = str(value)
        elif template[1] in os.environ:
            env[name] = os.environ[template[1]]
        elif template[2] is not None:
            env[name] = template[2]
        else:
            raise NoSolution(f"{where}: [solution] env: {name} needs ${template[1]}, which is not set here")
    return float(timeout or _NO_AGENT_LIMIT_S), env


def _as_root(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """Owned by root, as Harbor's upload leaves it (a root extraction keeps the owner)."""
    member.uid = member.gid = 0
    member.uname = member.gname = "root"
    return member


def _solve_command(folder: Path, env: Mapping[str, str], *, container: bool, shebang: bool) -> str:
    """One bash command line (run in the session's shell, its state untouched): unpack
    ``folder`` and run its ``solve.sh`` there; exits with the script's status."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=".", filter=_as_root)
    packed = base64.b64encode(buffer.getvalue()).decode()
    place = (
        f'd={HARBOR_SOLUTION_DIR}; {{ mkdir -p "$d" && [ -w "$d" ]; }} 2>/dev/null || d=$(mktemp -d)'
        if container
        else "d=$(mktemp -d)"
    )
    run = '"$d/solve.sh"' if shebang else 'bash "$d/solve.sh"'  # Harbor runs it as an executable
    names = " ".join(shlex.quote(f"{k}={v}") for k, v in {"DEBIAN_FRONTEND": "noninteractive", **env}.items())
    return (
        f'( {place} && printf %s {packed} | base64 -d | tar -xzf - -C "$d" '
        f'&& chmod +x "$d/solve.sh" && env {names} {run} )'
    )


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
