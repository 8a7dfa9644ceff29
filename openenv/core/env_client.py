"""Upstream's ``EnvClient``: our hook-based client (``openenv.client._hooks``)."""

from ..client._hooks import HookEnvClient as EnvClient
from ..client._hooks_result import HookStepResult as StepResult

__all__ = ["EnvClient", "StepResult"]
