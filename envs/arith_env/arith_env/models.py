"""Arith env models: data only, importable by clients without the server."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    max_operand: int | None = Field(
        default=None,
        ge=0,
        description="the largest operand (default: the largest with `digits` digits); "
        "operands are drawn from [smallest with `digits` digits, max_operand]",
    )
    ops: str = Field(default="+-", pattern=r"^[+\-*]{1,3}$", description="operators to draw from")
    rounds: int = Field(default=1, ge=1, le=8, description="problems per episode (one per step)")
    partial_credit: bool = Field(
        default=False,
        description="reward the breakdown's weighted score (0.1 format + 0.4 digits + 0.5 exact) "
        "instead of exact match only",
    )

    @model_validator(mode="after")
    def _operand_range(self) -> ArithOptions:
        largest = 10**self.digits - 1
        if self.max_operand is not None and not self.low <= self.max_operand <= largest:
            raise ValueError(
                f"max_operand must be between {self.low} and {largest} for {self.digits}-digit operands"
            )
        return self

    @property
    def low(self) -> int:
        """The smallest operand: 0 for one digit, else the smallest ``digits``-digit number."""
        return 0 if self.digits == 1 else 10 ** (self.digits - 1)

    @property
    def high(self) -> int:
        """The largest operand: ``max_operand``, else the largest ``digits``-digit number."""
        return 10**self.digits - 1 if self.max_operand is None else self.max_operand


EASY = ArithOptions(ops="+", max_operand=3, partial_credit=True)
"""The easy level: sums of two operands 0-3 (16 problems, one-character answers 0-6),
partial credit. A randomly initialised ``tiny`` model climbs it in about 100 GRPO steps
(``envs/arith_env/train_tiny.toml``); serve it with
``--env-kwargs '{"ops": "+", "max_operand": 3, "partial_credit": true}'``."""

MODELS = EnvModels(ArithAction, ArithObservation, ArithState)
