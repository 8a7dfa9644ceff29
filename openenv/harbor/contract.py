"""A Harbor rollout as the training contract (upstream's ``to_training_trace``)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..capture import TrainingTrace

if TYPE_CHECKING:
    from .models import HarborRolloutResult

_rollout: Any = importlib.import_module("terminal_env._rollout")


def to_training_trace(result: HarborRolloutResult) -> TrainingTrace:
    """The rollout's agent turns as a ``TrainingTrace``; ``NotTrainable`` (a ``ValueError``)
    for an ``eval`` rollout, whose turns carry no prompt ids and logprobs."""
    return TrainingTrace.model_validate(_rollout.training_trace(result.model_dump()))
