"""The arith environment: behaviour only."""

from __future__ import annotations

import random
import re
import uuid
from typing import Any

from pydantic import ValidationError

from openenv import Environment, Execution, ValidationFailed

from .models import ArithAction, ArithObservation, ArithOptions, ArithState

_INTEGER = re.compile(r"-?\d+")


def make_problems(seed: int | None, options: ArithOptions) -> list[tuple[str, int]]:
    """The episode's problems as ``(prompt, answer)``; a function of the seed and options."""
    rng = random.Random(seed)
    problems = []
    for _ in range(options.rounds):
        a, b = rng.randint(options.low, options.high), rng.randint(options.low, options.high)
        op = rng.choice(options.ops)
        if op == "-" and b > a:
            a, b = b, a  # answers stay non-negative
        value = a + b if op == "+" else a - b if op == "-" else a * b
        problems.append((f"{a}{op}{b}=", value))
    return problems


def score(answer: str, target: int) -> dict[str, float]:
    """The partial-credit breakdown of ``answer`` against ``target``.

    ``format``: the stripped answer is an integer. ``digits``: the fraction of digit
    positions (aligned on the right, over the longer of the two) that match.
    ``exact``: the stripped answer is the target's decimal form.
    """
    given = answer.strip()
    expected = str(target)
    well_formed = bool(_INTEGER.fullmatch(given))
    width = max(len(given), len(expected))
    same = sum(x == y for x, y in zip(given.rjust(width), expected.rjust(width), strict=True))
    return {
        "exact": float(given == expected),
        "format": float(well_formed),
        "digits": same / width if well_formed else 0.0,
    }


class ArithEnv(Environment[ArithAction, ArithObservation, ArithState]):
    """Solve short arithmetic problems; reward 1.0 for the exact answer.

    The problems are a function of the reset seed and options (``ArithOptions``:
    ``digits``, ``ops``, ``rounds``, ``partial_credit``; the constructor's keyword
    arguments are the defaults). Each step answers the current
    problem; the reply's ``prompt`` is the next one (empty when done). A step's reward
    is its score divided by ``rounds``, so an episode's return is in [0, 1]. The last
    step's metadata names the answers (``expected``: the last problem's; ``answers``:
    every problem's, in order), never an earlier one.
    """

    env_name = "arith_env"
    env_version = "0.1.0"
    execution = Execution.INLINE  # microseconds per call: stay on the loop
    reset_options_model = ArithOptions
    env_kwargs_model = ArithOptions  # --env-kwargs: checked when the server starts

    def __init__(self, **defaults: Any) -> None:
        """``defaults``: ``ArithOptions`` fields used where a reset does not set them
        (``openenv serve arith --env-kwargs '{"digits": 2}'``)."""
        self._defaults = ArithOptions(**defaults)
        self._state = ArithState()
        self._options = self._defaults
        self._problems: list[tuple[str, int]] = []

    def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Any = None,
    ) -> ArithObservation:
        if options is None:
            options = ArithOptions()
        elif not isinstance(options, ArithOptions):
            options = ArithOptions.model_validate(options)
        merged = {**self._defaults.model_dump(), **options.model_dump(include=options.model_fields_set)}
        try:
            options = ArithOptions.model_validate(merged)
        except ValidationError as exc:  # e.g. a reset's digits beyond the server's max_operand
            raise ValidationFailed(
                f"reset options with the server's defaults: {exc.errors()[0]['msg']}"
            ) from None
        self._options = options
        self._problems = make_problems(seed, options)
        self._state = ArithState(
            episode_id=episode_id or uuid.uuid4().hex, problems=[p for p, _ in self._problems]
        )
        return ArithObservation(prompt=self._problems[0][0])

    def step(self, action: ArithAction) -> ArithObservation:
        turn = self._state.step_count
        if turn >= len(self._problems):
            raise ValueError("the episode is over: reset to start another")
        self._state.step_count += 1
        breakdown = score(action.answer, self._problems[turn][1])
        self._state.solved += int(breakdown["exact"])
        if self._options.partial_credit:
            value = 0.1 * breakdown["format"] + 0.4 * breakdown["digits"] + 0.5 * breakdown["exact"]
        else:
            value = breakdown["exact"]
        done = self._state.step_count >= len(self._problems)
        metadata: dict[str, Any] = {"reward_breakdown": breakdown}
        if done:  # the answers only once nothing is left to answer
            metadata["expected"] = str(self._problems[turn][1])
            metadata["answers"] = [str(v) for _, v in self._problems]
        return ArithObservation(
            prompt="" if done else self._problems[turn + 1][0],
            reward=value / len(self._problems),
            done=done,
            metadata=metadata,
        )

    def state(self) -> ArithState:
        return self._state.model_copy()
