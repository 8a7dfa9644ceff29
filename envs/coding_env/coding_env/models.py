"""Coding env models: data only, importable by clients without the server parts."""

from __future__ import annotations

from pydantic import BaseModel, Field, StrictBool

from openenv import Action, EnvModels, Observation, State


class CodeAction(Action):
    """Run ``code`` in the session's Python worker, or ``submit`` a solution.

    With ``submit`` the hidden tests are run in a fresh sandbox and the episode ends:
    against ``code`` when it is not empty (it is not run in the worker), else against
    the cells that ran without an error so far, in order.
    """

    code: str = Field(default="", max_length=1_000_000)
    submit: StrictBool = False


class ExceptionInfo(BaseModel):
    """An exception a cell raised: its class name, message and traceback text."""

    type: str
    message: str = ""
    traceback: str = ""


class CodeObservation(Observation):
    """What a cell printed and returned; at reset, the task's prompt.

    Output past the limit keeps its head and tail around a ``[... N bytes omitted
    ...]`` line; ``*_omitted_bytes`` count what was dropped. ``timed_out``: the cell
    overran and was interrupted (``KeyboardInterrupt``); ``state_lost``: the worker
    had to be killed and a fresh one started, so every variable is gone.
    """

    stdout: str = ""
    stderr: str = ""
    result: str | None = None
    exception: ExceptionInfo | None = None
    execution_count: int = 0
    duration_s: float = 0.0
    timed_out: bool = False
    state_lost: bool = False
    stdout_omitted_bytes: int = 0
    stderr_omitted_bytes: int = 0
    task_id: str | None = None
    prompt: str = ""


class CodeState(State):
    """Episode state: the task, cells run, worker restarts and the final reward."""

    task_id: str | None = None
    execution_count: int = 0
    restarts: int = 0
    submitted: bool = False
    reward: float | None = None


MODELS = EnvModels(CodeAction, CodeObservation, CodeState)
