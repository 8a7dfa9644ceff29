"""Upstream ``HarborEnvironment``'s MCP tools on the terminal env: ``run_rollout``, ``list_tasks``.

Upstream's client (``openenv.harbor.HarborEnv.run_rollout`` of OpenEnv 0.10) sends a
``call_tool`` step; ``HarborToolEnv`` answers it. ``run_rollout`` is one ``openenv
eval`` episode (``_rollout.run_rollout``, the same one our client-side ``HarborEnv``
plays) that this server plays against itself: a second session, opened on the address
the call came in on, driven by the policy ``harness`` names (``oracle``, ``null``,
``openai:MODEL``, ``module:Class``...). The calling session waits (up to its call
deadline, ``call_timeout_s`` 1800 s; the episode to ``agent_timeout_sec``, default
600 s) and its own shell is left as it was. The answer is the rollout's
``HarborRolloutResult`` as JSON; a rollout that could not run (an unknown policy, a task
index past the split's end) is a result with ``ok = false`` and the error, as upstream's
tool gives it. ``list_tasks`` is a window of a split's tasks (``HarborTaskRef`` rows).
The env is named ``harbor_env`` and its Task API rows carry ``HarborTaskRef``'s keys, so
upstream's client reads ``splits``, ``num_tasks``, ``get_task`` and ``get_task_range`` too.

Upstream's engine and sandbox arguments (``sandbox``, ``llm_url``, ``model``,
``sampling``, ...) are taken and not used: the env's own container or sandbox runs the
task, and the policy names its model. An argument upstream does not have is refused
(``invalid_args``). A server started with a bearer token cannot call itself here (the
eval client sends none): ``run_rollout`` then fails with the server's 401.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import model_validator

from openenv._exceptions import ValidationFailed
from openenv.server._admission import served_at
from openenv.server._upstream_models import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    Observation,
    ToolError,
    ToolErrorType,
)
from openenv.tasks import Task

from . import _rollout
from ._tasks import HarborTaskSet
from .env import TerminalEnv
from .models import TerminalAction, TerminalObservation

_ROLLOUT_ARGS = {
    "split": "",
    "task_index": 0,
    "harness": "oracle",
    "agent_timeout_sec": 0.0,
    "agent_step_limit": 0,
}
#: Upstream's other ``run_rollout`` arguments: accepted, not used here.
_UPSTREAM_ONLY = frozenset({
    "sandbox", "reward_key", "keep_sandbox", "force_build", "llm_url", "model", "api_key",
    "auth_header", "sampling", "provider", "purpose", "eval_sampling",
})
_LIST_ARGS = {"split": "", "start": 0, "stop": 20}
TOOLS = {
    "run_rollout": (
        "Play one task with one policy (harness: oracle, null, openai:MODEL, module:Class...) and "
        "return its HarborRolloutResult as JSON: the env's reward and named rewards.",
        _ROLLOUT_ARGS,
    ),
    "list_tasks": ("A window [start, stop) of a split's tasks, as JSON HarborTaskRef rows.", _LIST_ARGS),
}
_JSON = {str: "string", int: "integer", float: "number"}


def _dispatch(cls: type[Any], data: Any, handler: Any) -> Any:
    if isinstance(data, dict) and data.get("type") in ("call_tool", "list_tools"):
        model = CallToolAction if data["type"] == "call_tool" else ListToolsAction
        return model.model_validate(data)
    return handler(data)


#: The terminal env's actions, and upstream's ``call_tool`` / ``list_tools`` payloads;
#: its name and doc are TerminalAction's, so ``/schema`` is the terminal env's own.
HarborAction: type[TerminalAction] = type(
    "TerminalAction",
    (TerminalAction,),
    {
        "__module__": __name__,
        "__qualname__": "TerminalAction",
        "__doc__": TerminalAction.__doc__,
        "tool_payloads": model_validator(mode="wrap")(classmethod(_dispatch)),  # type: ignore[arg-type]
    },
)


def _server_url() -> str:
    here = served_at.get()
    if here is None:
        raise ValidationFailed("run_rollout needs the call to come over a TCP connection to this server")
    host, port = here
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _arguments(name: str, given: dict[str, Any]) -> dict[str, Any]:
    known = TOOLS[name][1]
    unknown = set(given) - set(known) - (_UPSTREAM_ONLY if name == "run_rollout" else set())
    if unknown:
        raise ValueError(f"{name}: unknown arguments {sorted(unknown)} (takes {sorted(known)})")
    return {k: type(v)(given.get(k, v)) for k, v in known.items()}


#: Rollouts run on threads of their own, never the loop's default executor: the episode
#: each plays needs that executor (its reset starts a container there), so rollouts
#: holding all of its few threads would wait on themselves.
_ROLLOUTS = ThreadPoolExecutor(max_workers=256, thread_name_prefix="openenv-harbor-rollout")


async def _run_rollout(args: dict[str, Any]) -> str:
    url = _server_url()
    try:  # off the loop: the eval's own calls come back to this server
        result = await asyncio.get_running_loop().run_in_executor(
            _ROLLOUTS,
            asyncio.run,
            _rollout.run_rollout(
                url,
                split=args["split"],
                task_index=args["task_index"],
                harness=args["harness"],
                max_turns=args["agent_step_limit"] or 30,
                agent_timeout_sec=args["agent_timeout_sec"],
            ),
        )
    except Exception as exc:  # upstream's tool answers a failed rollout, it does not raise
        return json.dumps({
            "ok": False,
            "reward": None,
            "harness": args["harness"],
            "error": " ".join(f"{type(exc).__name__}: {exc}".split())[:400],
            "exception_type": type(exc).__name__,
        })
    return json.dumps(result)


async def _list_tasks(args: dict[str, Any]) -> str:
    url = _server_url()
    rows = await asyncio.get_running_loop().run_in_executor(
        _ROLLOUTS, _rollout.task_refs, url, args["split"], args["start"], args["stop"]
    )
    return json.dumps(rows)


def _tool_list() -> Observation:
    from openenv.core.env_server.mcp_types import ListToolsObservation, Tool

    tools = [
        Tool(
            name=name,
            description=about,
            input_schema={
                "type": "object",
                "properties": {k: {"type": _JSON[type(v)], "default": v} for k, v in args.items()},
                "required": [],
            },
        )
        for name, (about, args) in TOOLS.items()
    ]
    return ListToolsObservation(tools=tools)


async def tool_step(action: CallToolAction | ListToolsAction) -> Observation:
    """The observation upstream's MCP client reads for a ``list_tools`` or ``call_tool`` step."""
    if isinstance(action, ListToolsAction):
        return _tool_list()
    name = action.tool_name
    if name not in TOOLS:
        missing = f"no tool {name!r} (has {sorted(TOOLS)})"
        error = ToolError(error_type=ToolErrorType.TOOL_NOT_FOUND, message=missing)
        return CallToolObservation(tool_name=name, error=error)
    try:
        args = _arguments(name, action.arguments)
    except (TypeError, ValueError) as exc:
        error = ToolError(error_type=ToolErrorType.INVALID_ARGS, message=str(exc))
        return CallToolObservation(tool_name=name, error=error)
    try:
        result = await (_run_rollout(args) if name == "run_rollout" else _list_tasks(args))
    except Exception as exc:
        error = ToolError(error_type=ToolErrorType.EXECUTION_ERROR, message=f"{type(exc).__name__}: {exc}")
        return CallToolObservation(tool_name=name, error=error)
    return CallToolObservation(tool_name=name, result=result)


@dataclass(frozen=True, slots=True)
class HarborTaskRow(Task):
    """A Task API row with upstream's ``HarborTaskRef`` keys beside ours (its client
    validates ``task_id``, ``task_name``, ``dataset``, ``instruction``)."""

    def to_json(self) -> dict[str, Any]:
        extra = {"task_id": self.id, "task_name": self.id, "dataset": self.split}
        return {**Task.to_json(self), **extra, "instruction": str(self.data.get("instruction", ""))}


class HarborToolTaskSet(HarborTaskSet):
    """The terminal env's task folders, listed with upstream's ``HarborTaskRef`` keys."""

    def _task(self, split: str, index: int, row: dict[str, Any]) -> Task:
        task = super()._task(split, index, row)
        return HarborTaskRow(task.id, task.split, task.index, task.data)


class HarborToolEnv(TerminalEnv):
    """The terminal env that also answers upstream's Harbor tool calls (module docstring),
    named as upstream's server is, so its client finds the Task API at ``/harbor_env/``."""

    env_name = "harbor_env"
    task_set: ClassVar[HarborTaskSet] = HarborToolTaskSet(TerminalEnv.task_set.root)
    action_model = HarborAction
    call_timeout_s: ClassVar[float | None] = 1800.0  # a rollout is minutes, as upstream's

    async def step(self, action: Any) -> Any:
        if isinstance(action, CallToolAction | ListToolsAction):
            return await tool_step(action)
        obs: TerminalObservation = await super().step(action)
        return obs
