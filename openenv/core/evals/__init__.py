"""Upstream's ``openenv.core.evals`` names over ``openenv.eval``'s harnesses."""

from .base import EvalHarness
from .inspect_harness import InspectAIHarness
from .types import EvalConfig, EvalResult

__all__ = ["EvalConfig", "EvalHarness", "EvalResult", "InspectAIHarness"]
