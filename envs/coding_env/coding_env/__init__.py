"""Coding environment. Clients import the models; the server imports ``CodingEnv``
(loaded on first use, so a client never imports the sandbox or the task set)."""

import typing as _typing

from openenv._lazy import lazy_exports as _lazy_exports

from .models import MODELS, CodeAction, CodeObservation, CodeState, ExceptionInfo

if _typing.TYPE_CHECKING:
    from .env import CodingEnv

__all__ = ["MODELS", "CodeAction", "CodeObservation", "CodeState", "CodingEnv", "ExceptionInfo"]

__getattr__, __dir__ = _lazy_exports(__name__, {"CodingEnv": ".env"}, __all__)
