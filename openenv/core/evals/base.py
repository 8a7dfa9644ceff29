"""Upstream's ``EvalHarness``: ``openenv.eval.EvalHarness``."""

from ...eval._harness import EvalHarness

__all__ = ["EvalHarness"]
