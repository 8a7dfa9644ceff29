"""Upstream's ``StepResult(observation, reward, done)``: our ``HookStepResult``."""

from ..client._hooks_result import HookStepResult as StepResult
from ..client._hooks_result import ObsT, StateT

__all__ = ["ObsT", "StateT", "StepResult"]
