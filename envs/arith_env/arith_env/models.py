"""Arith env models: data only, importable by clients without the server."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from openenv import Action, EnvModels, Observation, State


class ArithAction(Action):
    """Answer the current problem with an integer, e.g. ``"42"``."""

    answer: str = Field(max_length=256, description="the answer: an integer in decimal, e.g. 42")


class ArithObservation(Observation):
    """The problem to solve (``"12+7="``); empty once the episode is over.

    After a step, ``metadata["reward_breakdown"]`` holds ``exact``, ``format`` and
    ``digits`` (each 0..1) for the answer just given.
    """

    prompt: str = ""


class ArithState(State):
    """Episode state: the problems of this episode and how many were solved."""

    problems: list[str] = Field(default_factory=list)
    solved: int = 0


class ArithOptions(BaseModel):
    """Reset options: the difficulty of the episode's problems."""

    model_config = ConfigDict(extra="forbid")

    digits: int = Field(default=1, ge=1, le=6, description="digits per operand")
    ops: str = Field(default="+-", pattern=r"^[+\-*]{1,3}$", description="operators to draw from")
    rounds: int = Field(default=1, ge=1, le=8, description="problems per episode (one per step)")
    partial_credit: bool = Field(
        default=False,
        description="reward the breakdown's weighted score (0.1 format + 0.4 digits + 0.5 exact) "
        "instead of exact match only",
    )


MODELS = EnvModels(ArithAction, ArithObservation, ArithState)
