"""Upstream's ``LLMJudge`` over ``openenv.rewards.LLMJudge``: the first number in the reply
(or ``score_pattern``'s first group), clamped to [0, 1] when ``normalize``; an unreadable
reply scores ``default_score`` and is recorded, with the reply, in ``last_judgement``."""

from __future__ import annotations

from typing import Any

from ...rewards._judge import LLMJudge as _Judge
from .base import Rubric


class LLMJudge(_Judge, Rubric):  # type: ignore[misc]
    """``LLMJudge(prompt_template, client, score_pattern=, default_score=, normalize=)``."""

    def __init__(self, prompt_template: str, client: Any, *, score_pattern: str | None = None,
                 default_score: float = 0.0, normalize: bool = True) -> None:  # fmt: skip
        super().__init__(prompt_template, client, score=score_pattern or r"(\d+\.?\d*)", normalize=False,
                         out_of_range="clamp" if normalize else "keep", default_score=default_score,
                         cache=False, name="llm_judge")  # fmt: skip
