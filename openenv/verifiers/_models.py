"""The models of a served verifiers taskset: data only, importable without verifiers."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from .._models import Action, EnvModels, Observation, State
from .._types import JSON_INTEGER


class ChatMessage(BaseModel):
    """One chat message of the task's prompt (RFC 0002's ``messages`` item)."""

    model_config = ConfigDict(extra="forbid")

    role: str = Field(description="system, user, assistant or tool")
    content: str


class VerifiersAction(Action):
    """The model's completion for the task: the one text field (RFC 0002)."""

    completion: str = Field(max_length=1 << 20, description="the model's reply to the prompt")


class VerifiersObservation(Observation):
    """After a reset: the task's prompt, as text (``prompt``: the system prompt, a blank
    line, then the prompt, as verifiers folds them) and as chat ``messages``. After the
    step: empty, with the reward, and ``metadata["rewards"]`` holding each named reward
    of the task as ``{"score", "weight"}`` (the reward is the sum of score x weight, as
    verifiers' ``Trace.reward``) and ``metadata["metrics"]`` its metrics."""

    prompt: str = ""
    messages: list[ChatMessage] = Field(default_factory=list)
    task_id: str = Field(default="", description="the task's id in the Task API")


class VerifiersState(State):
    """Which task of which split, and the reward once the completion was scored."""

    task_id: str = ""
    split: str = ""
    index: int = 0
    answered: bool = False
    reward: float | None = None


class VerifiersOptions(BaseModel):
    """Reset options: the task by ``task_id`` (its id, else its name, else ``<split>-<idx>``),
    else by ``index`` in ``split``, else drawn from the reset seed (same seed, same task)."""

    model_config = ConfigDict(extra="forbid")

    task_id: str | None = Field(default=None, min_length=1)
    index: Annotated[int, Field(ge=0), JSON_INTEGER] | None = None
    split: str | None = None


MODELS = EnvModels(VerifiersAction, VerifiersObservation, VerifiersState)
