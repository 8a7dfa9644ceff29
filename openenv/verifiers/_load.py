"""Find a verifiers taskset by its id, load its tasks, and refuse what cannot be served.

verifiers (PyPI ``verifiers``, 0.4's ``verifiers.v1`` stack) is imported here, on first
use: a missing one is ``MissingExtra`` naming the ``verifiers`` extra. A taskset id is
what verifiers' own loader takes: a built-in taskset (``verifiers.v1.tasksets.<id>``) or
an installed module that exports its ``vf.Taskset`` subclass in ``__all__``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from collections.abc import Mapping
from typing import Any

from .._exceptions import EnvKwargsError, EnvNotFound, ServeFailed
from .._extras import require

#: The verifiers releases this adapter is written and tested against.
REQUIREMENT = "verifiers>=0.4,<0.5"
_DOTTED = re.compile(r"^[A-Za-z_][\w-]*(\.[A-Za-z_]\w*)*$")


def verifiers() -> Any:
    """``verifiers.v1``, or ``MissingExtra`` (one line naming the extra to install)."""
    return require("verifiers.v1", extra="verifiers", feature="openenv.verifiers")


def module_name(taskset_id: str) -> str:
    """The module verifiers imports for ``taskset_id``: its built-in taskset of that name,
    else the installed module (``-`` read as ``_``, as verifiers does); ``EnvNotFound``
    when there is neither."""
    if not _DOTTED.match(taskset_id):
        raise EnvNotFound(f"{taskset_id!r} is not a module name (a verifiers taskset is an installed module)")
    verifiers()
    name = taskset_id.replace("-", "_").lower()
    for candidate in (f"verifiers.v1.tasksets.{name}", name):
        try:
            if importlib.util.find_spec(candidate) is not None:
                return candidate
        except ModuleNotFoundError:  # a parent package of a dotted name is missing
            continue
    raise EnvNotFound(
        f"no module named {name!r}: a verifiers taskset is an installed module (or one in the "
        "current folder) exporting its vf.Taskset subclass in __all__"
    )


def taskset_class(taskset_id: str) -> type:
    """The ``vf.Taskset`` subclass the module exports; ``EnvNotFound`` naming what is wrong."""
    vf = verifiers()
    name = module_name(taskset_id)
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # the module itself fails to import: one line, not a traceback
        raise EnvNotFound(f"cannot import {name!r}: {type(exc).__name__}: {exc}") from None
    exported = [getattr(module, n, None) for n in getattr(module, "__all__", None) or ()]
    found = [c for c in exported if isinstance(c, type) and issubclass(c, vf.Taskset) and c is not vf.Taskset]
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(c.__name__ for c in found)
        raise EnvNotFound(f"module {name!r} exports {len(found)} vf.Taskset subclasses ({names}): export one")
    legacy = " (it has load_environment(), the verifiers < 0.4 API: port it to a vf.Taskset)"
    raise EnvNotFound(
        f"module {name!r} exports no vf.Taskset subclass in __all__"
        + (legacy if hasattr(module, "load_environment") else "")
    )


def load_taskset(taskset_id: str, config: Mapping[str, Any]) -> Any:
    """The taskset ``taskset_id`` built with ``config`` (its ``TasksetConfig`` fields);
    ``EnvKwargsError`` naming the field its config refuses."""
    vf = verifiers()
    cls = taskset_class(taskset_id)
    config_type = vf.taskset_config_type(taskset_id)  # the config class the taskset declares
    try:
        cfg = config_type.model_validate({**config, "id": taskset_id})
    except Exception as exc:  # pydantic's ValidationError: name the first field
        errors: list[dict[str, Any]] = getattr(exc, "errors", lambda: [])()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        msg = errors[0]["msg"] if errors else str(exc)
        raise EnvKwargsError(f"taskset {taskset_id!r} config{' ' + where if where else ''}: {msg}") from None
    return cls(cfg)


def load_tasks(taskset_id: str, config: Mapping[str, Any], limit: int | None = None) -> list[Any]:
    """The taskset's tasks (the first ``limit``), each checked servable; ``EnvNotFound``
    naming the first task that is not, and why."""
    taskset = load_taskset(taskset_id, config)
    if limit is not None:
        taskset = taskset.take(limit)
    elif not taskset.bounded:
        raise EnvKwargsError(f"taskset {taskset_id!r} is infinite: give a limit (the first N tasks served)")
    try:
        tasks = list(taskset)
    except Exception as exc:  # the taskset's own load(): one line, not a traceback
        why = f"{type(exc).__name__}: {exc}"
        raise ServeFailed(f"taskset {taskset_id!r} failed to load its tasks: {why}") from None
    if type(taskset).toolsets(taskset.config):
        raise EnvNotFound(f"taskset {taskset_id!r} gives the model tools (toolsets): not a text env")
    checked: set[type] = set()
    for task in tasks:
        if type(task) not in checked:
            checked.add(type(task))
            problem = unservable(task)
            if problem:
                raise EnvNotFound(f"taskset {taskset_id!r}: task {type(task).__name__} {problem}")
    return tasks


def unservable(task: Any) -> str | None:
    """Why ``task`` cannot be served as prompt in, completion out, scored with no
    runtime; None when it can."""
    vf = verifiers()
    cls = type(task)
    if cls.NEEDS_CONTAINER:
        return "needs a container (NEEDS_CONTAINER): not served as a text env"
    if cls.toolsets(task.config):
        return "gives the model tools (toolsets): not served as a text env"
    for hook in ("setup", "finalize", "stage_verifier"):
        if getattr(cls, hook) is not getattr(vf.Task, hook):
            return f"has its own {hook}(), which runs in a runtime: not served as a text env"
    for kind in ("reward", "metric"):
        for fn in task.hooks(kind):
            param = inspect.signature(fn).parameters.get("runtime")
            if param is not None and param.default is inspect.Parameter.empty:
                return f"scores with {kind} {fn.__name__}(), which needs a runtime: not served as a text env"
    if task.data.prompt is None:
        return "has no prompt (a user agent opens it): not served as a text env"
    return None
