"""Coding environment. Clients import the models; the server imports ``CodingEnv``
(loaded on first use, so a client never imports the sandbox or the task set)."""

from typing import TYPE_CHECKING

from openenv._lazy import lazy_exports

from .models import MODELS, CodeAction, CodeObservation, CodeState, ExceptionInfo

if TYPE_CHECKING:
    from .env import CodingEnv

__all__ = ["MODELS", "CodeAction", "CodeObservation", "CodeState", "CodingEnv", "ExceptionInfo"]

__getattr__, __dir__ = lazy_exports(__name__, {"CodingEnv": ".env"}, __all__)
