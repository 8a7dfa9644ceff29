"""Upstream's ``InspectAIHarness``: ``openenv.eval.InspectAIHarness`` (Inspect AI's ``eval()``)."""

from ...eval._harness import InspectAIHarness

__all__ = ["InspectAIHarness"]
