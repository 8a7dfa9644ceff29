"""Upstream 0.10's Task API, served for an env class that declares a ``task_set``.

    GET  /list_environments        -> ["<env_name>"]
    GET  /{env_name}/splits        -> [{"name", "type"}]        type: train|validation|test
    POST /{env_name}/tasks         {"split"}                    -> {"tasks": [...], "env_name"}
    POST /{env_name}/num_tasks     {"split"}                    -> {"num_tasks": n}
    POST /{env_name}/task          {"split", "index"}           -> {"task": {...}}
    POST /{env_name}/task_range    {"split", "start"?, "stop"?} -> {"tasks": [...]}

``env_name`` matches the env's ``/metadata`` name case-insensitively (404 otherwise, as
upstream). A task is ``{"id", "split", "index", "data"}``. An unknown split is
``TASK_NOT_FOUND`` (404); an index out of range is 400 as upstream answers it, with
``TASK_NOT_FOUND`` in the ``error`` object. The task set is read off the event loop.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._env import EnvClass
from .._exceptions import InvalidJSON, TaskNotFound, ValidationFailed, WireError
from .._types import JsonInt
from ._http import body_error, json_response, wire_error_response
from ._openapi import NOT_FOUND, ApiRoute, Operation
from ._task_schema import TaskCatalog

_SPLIT_TYPES = ("train", "validation", "test")


class _SplitBody(BaseModel):
    split: str


class _TaskBody(_SplitBody):
    index: JsonInt  # past either end: 400 "Invalid task index", as upstream


class _RangeBody(_SplitBody):
    start: JsonInt | None = None
    stop: JsonInt | None = None


_TASKS = {"type": "array", "items": {"type": "object"}}
_BODY_ERRORS = (ValidationFailed, InvalidJSON, TaskNotFound)
#: an unknown ``env_name`` in the path (``NOT_FOUND``)
_UNKNOWN_ENV = {404: [NOT_FOUND]}


def task_set_of(env_class: EnvClass) -> Any:
    """The env class's ``TaskSet`` or None (``openenv.tasks`` is imported only if used)."""
    if getattr(env_class, "task_set", None) is None:
        return None
    from ..tasks._taskset import task_set_of as find

    return find(env_class)


async def preload_tasks(env_class: EnvClass) -> None:
    """Load the env's task set once, at startup, off the event loop."""
    tasks = task_set_of(env_class)
    if tasks is not None:
        await asyncio.to_thread(tasks.load)


def split_entry(name: str) -> dict[str, str]:
    return {"name": name, "type": name if name in _SPLIT_TYPES else "validation"}


def task_routes(env_class: EnvClass) -> list[Route]:
    """The Task API routes, or none when the env declares no task set."""
    tasks = task_set_of(env_class)
    if tasks is None:
        return []
    env_name = env_class.metadata().name
    catalog = functools.cache(lambda: TaskCatalog.read(env_name, tasks))  # for the document: once

    def path() -> dict[str, dict[str, Any]]:
        return {"env_name": catalog().env_name_parameter()}

    def endpoint(body_model: type[BaseModel] | None, answer: Callable[[Any], Any]) -> Any:
        adapter = TypeAdapter(body_model) if body_model is not None else None

        async def handle(request: Request) -> Response:
            asked = request.path_params.get("env_name", env_name)
            if asked.lower() != env_name.lower():
                msg = f"unknown environment {asked!r}"
                return json_response({"detail": msg, "error": {"code": NOT_FOUND, "message": msg}}, 404)
            body = None
            if adapter is not None:
                try:
                    body = adapter.validate_json((await request.body()) or b"{}")
                except ValidationError as exc:
                    raise body_error(exc) from None
            try:
                return json_response(await asyncio.to_thread(answer, body))
            except TaskNotFound as err:
                if "index" in err.details:  # upstream: IndexError -> 400 "Invalid task index"
                    return json_response({"detail": "Invalid task index", "error": err.to_wire()}, 400)
                return wire_error_response(err)
            except WireError:
                raise

        return handle

    def tasks_of(split: str) -> list[Any]:
        return [t.to_json() for t in tasks.range(split)]

    def one(body: Any) -> Any:
        tasks.num_tasks(body.split)  # an unknown split is TASK_NOT_FOUND before the index
        return {"task": tasks.get(body.index, body.split).to_json()}

    def post(
        route: str, name: str, body: type[BaseModel], answer: Callable[[Any], Any], summary: str, reply: Any,
        schema: Callable[[TaskCatalog], dict[str, Any]], also: dict[int, list[str]] = _UNKNOWN_ENV,
    ) -> Route:
        op = Operation(
            summary, reply, body=body, errors=_BODY_ERRORS, also=also,
            body_schema=lambda: schema(catalog()), path_schemas=path,
        )
        return ApiRoute(route, {"POST": (endpoint(body, answer), op)}, name)

    def obj(**properties: Any) -> dict[str, Any]:
        return {"type": "object", "required": list(properties), "properties": properties}

    splits = {"type": "array", "items": obj(name={"type": "string"}, type={"enum": list(_SPLIT_TYPES)})}
    return [
        ApiRoute("/list_environments", {"GET": (endpoint(None, lambda _: [env_name]), Operation(
            "Names of the environments served (this one)", {"type": "array", "items": {"type": "string"}},
        ))}, "list_environments"),
        ApiRoute("/{env_name}/splits", {"GET": (
            endpoint(None, lambda _: [split_entry(s) for s in tasks.splits]),
            Operation("The task set's splits", splits, also=_UNKNOWN_ENV, path_schemas=path),
        )}, "task_splits"),
        post("/{env_name}/tasks", "tasks", _SplitBody,
             lambda b: {"tasks": tasks_of(b.split), "env_name": env_name},
             "Every task of a split", obj(tasks=_TASKS, env_name={"type": "string"}), TaskCatalog.split_body),
        post("/{env_name}/num_tasks", "num_tasks", _SplitBody,
             lambda b: {"num_tasks": tasks.num_tasks(b.split)},
             "How many tasks a split holds", obj(num_tasks={"type": "integer", "minimum": 0}),
             TaskCatalog.split_body),
        post("/{env_name}/task", "task", _TaskBody, one,
             "One task of a split by index (400 past the end, as upstream)", obj(task={"type": "object"}),
             TaskCatalog.task_body, also={**_UNKNOWN_ENV, 400: [TaskNotFound.code.value]}),
        post("/{env_name}/task_range", "task_range", _RangeBody,
             lambda b: {"tasks": [t.to_json() for t in tasks.range(b.split, b.start, b.stop)]},
             "The tasks of a split from start to stop (Python slice bounds)", obj(tasks=_TASKS),
             TaskCatalog.range_body),
    ]
