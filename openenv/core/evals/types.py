"""Upstream's ``EvalConfig`` and ``EvalResult``: ``openenv.eval.HarnessConfig`` / ``HarnessResult``."""

from ...eval._harness import HarnessConfig as EvalConfig
from ...eval._harness import HarnessResult as EvalResult

__all__ = ["EvalConfig", "EvalResult"]
