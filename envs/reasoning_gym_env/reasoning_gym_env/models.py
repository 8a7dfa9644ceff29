"""reasoning-gym env models: data only, importable by clients without reasoning-gym."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from openenv import JSON_INTEGER, Action, EnvModels, Observation, State


class RGAction(Action):
    """The answer to the question, as the family's scorer reads it (e.g. ``"42"``)."""

    answer: str = Field(max_length=65536, description="the answer to the question")


class RGObservation(Observation):
    """The question (``prompt``) after a reset; empty after the answer.

    After the step, ``metadata["score"]`` is the family's own score of the answer and
    ``metadata["expected"]`` the reference answer.
    """

    prompt: str = ""
    family: str = Field(default="", description="the reasoning-gym dataset the question is from")


class RGState(State):
    """Episode state: which question of which family, and whether it was answered."""

    family: str = ""
    index: int = 0
    answered: bool = False
    score: float | None = None


class RGOptions(BaseModel):
    """Reset options (and ``--env-kwargs`` defaults): the family and its configuration.

    The question is entry ``index`` of ``reasoning_gym.create_dataset(family, size=size,
    seed=dataset_seed, **config)``; without ``index`` it is drawn from the reset seed,
    so the same seed and options give the same question. ``task_id`` (with ``split``)
    names the family as the Task API lists it, so Task API clients can pick one.
    """

    model_config = ConfigDict(extra="forbid")

    family: str = Field(
        default="basic_arithmetic", min_length=1, description="a reasoning-gym dataset name, e.g. chain_sum"
    )
    size: Annotated[int, Field(ge=1, le=1_000_000), JSON_INTEGER] = Field(
        default=1000, description="questions in the dataset the reset seed draws from"
    )
    dataset_seed: Annotated[int, Field(ge=0), JSON_INTEGER] = Field(
        default=0, description="the dataset's own seed (reasoning-gym's `seed`)"
    )
    index: Annotated[int, Field(ge=0), JSON_INTEGER] | None = Field(
        default=None, description="the entry to ask (default: drawn from the reset seed)"
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description='the family\'s own configuration fields, e.g. {"max_terms": 3}'
    )
    task_id: str | None = Field(
        default=None, min_length=1, description="a Task API id: the family (what `openenv eval` sends)"
    )
    split: str | None = Field(default=None, description="the Task API split: only 'train'")


MODELS = EnvModels(RGAction, RGObservation, RGState)
