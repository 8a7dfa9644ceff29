"""Coding environment. Clients import the models; the server imports ``CodingEnv``
(loaded on first use, so a client never imports the sandbox or the task set)."""

from typing import TYPE_CHECKING, Any

from .models import MODELS, CodeAction, CodeObservation, CodeState, ExceptionInfo

if TYPE_CHECKING:
    from .env import CodingEnv

__all__ = ["MODELS", "CodeAction", "CodeObservation", "CodeState", "CodingEnv", "ExceptionInfo"]


def __getattr__(name: str) -> Any:
    if name == "CodingEnv":
        from .env import CodingEnv

        return CodingEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
