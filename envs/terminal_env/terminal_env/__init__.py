"""Terminal environment. Clients import the models; the server imports ``TerminalEnv``."""

from .env import TerminalEnv
from .models import MODELS, TerminalAction, TerminalObservation, TerminalResetOptions, TerminalState

__all__ = [
    "MODELS",
    "TerminalAction",
    "TerminalEnv",
    "TerminalObservation",
    "TerminalResetOptions",
    "TerminalState",
]
