"""Arith env models: data only, importable by clients without the server."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from openenv import JSON_INTEGER, Action, EnvModels, Observation, State

MAX_DIGITS = 6


class ArithAction(Action):
    """Answer the current problem with an integer, e.g. ``"42"``."""

    answer: str = Field(max_length=256, description="the answer: an integer in decimal, e.g. 42")


class ArithObservation(Observation):
    """The problem to solve (``"12+7="``); empty once the episode is over.

    After a step, ``metadata["reward_breakdown"]`` holds ``exact``, ``format`` and
    ``digits`` (each 0..1) for the answer just given. The episode's last step adds
    ``expected`` (the last problem's answer) and ``answers`` (each problem's, in order):
    revealed once nothing is left to answer, never before.
    """

    prompt: str = ""


class ArithState(State):
    """Episode state: the problems of this episode and how many were solved."""

    problems: list[str] = Field(default_factory=list)
    solved: int = 0


def operand_range(digits: int) -> tuple[int, int]:
    """The smallest and largest operand with ``digits`` digits (0 is a one-digit operand)."""
    return (0 if digits == 1 else 10 ** (digits - 1)), 10**digits - 1


def _max_operand_by_digits(schema: dict[str, Any]) -> None:
    """The cross-field check in the JSON Schema: for each ``digits`` (1 when absent),
    ``max_operand`` is null or within that many digits' operand range."""

    def bounded(digits: int) -> dict[str, Any]:
        low, high = operand_range(digits)
        allowed = {"anyOf": [{"type": "integer", "minimum": low, "maximum": high}, {"type": "null"}]}
        return {"properties": {"max_operand": allowed}}

    cases = [
        {"if": {"required": ["digits"], "properties": {"digits": {"const": d}}}, "then": bounded(d)}
        for d in range(1, MAX_DIGITS + 1)
    ]
    cases.append({"if": {"not": {"required": ["digits"]}}, "then": bounded(1)})
    schema["allOf"] = cases


class ArithOptions(BaseModel):
    """Reset options: the difficulty of the episode's problems.

    JSON types are strict (``partial_credit`` is a boolean, not ``0``; the integers are
    not ``true``), and the schema states the cross-field check: ``max_operand`` lies in
    the operand range of ``digits``. A server started with other defaults
    (``--env-kwargs``) merges a reset's options over them, then checks the result.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_max_operand_by_digits)

    digits: Annotated[int, Field(ge=1, le=MAX_DIGITS), JSON_INTEGER] = Field(
        default=1, description="digits per operand"
    )
    max_operand: Annotated[int, Field(ge=0), JSON_INTEGER] | None = Field(
        default=None,
        description="the largest operand (default: the largest with `digits` digits); "
        "operands are drawn from [smallest with `digits` digits, max_operand]",
    )
    ops: str = Field(default="+-", pattern=r"^[+\-*]{1,3}$", description="operators to draw from")
    rounds: Annotated[int, Field(ge=1, le=8), JSON_INTEGER] = Field(
        default=1, description="problems per episode (one per step)"
    )
    partial_credit: StrictBool = Field(
        default=False,
        description="reward the breakdown's weighted score (0.1 format + 0.4 digits + 0.5 exact) "
        "instead of exact match only",
    )

    @model_validator(mode="after")
    def _operand_range(self) -> ArithOptions:
        low, largest = operand_range(self.digits)
        if self.max_operand is not None and not low <= self.max_operand <= largest:
            raise ValueError(
                f"max_operand must be between {low} and {largest} for {self.digits}-digit operands"
            )
        return self

    @property
    def low(self) -> int:
        """The smallest operand: 0 for one digit, else the smallest ``digits``-digit number."""
        return operand_range(self.digits)[0]

    @property
    def high(self) -> int:
        """The largest operand: ``max_operand``, else the largest ``digits``-digit number."""
        return operand_range(self.digits)[1] if self.max_operand is None else self.max_operand


EASY = ArithOptions(ops="+", max_operand=3, partial_credit=True)
"""The easy level: sums of two operands 0-3 (16 problems, one-character answers 0-6),
partial credit. A randomly initialised ``tiny`` model climbs it in about 100 GRPO steps
(``envs/arith_env/train_tiny.toml``); serve it with
``--env-kwargs '{"ops": "+", "max_operand": 3, "partial_credit": true}'``."""

MODELS = EnvModels(ArithAction, ArithObservation, ArithState)
