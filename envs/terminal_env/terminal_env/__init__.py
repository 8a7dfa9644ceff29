"""Terminal environment. Clients import the models; the server imports ``TerminalEnv``."""

from .env import TerminalEnv
from .models import (
    MODELS,
    AnyTerminalAction,
    InterruptAction,
    ReadAction,
    ReadFileAction,
    RestartAction,
    RunAction,
    SendKeysAction,
    SubmitAction,
    TerminalAction,
    TerminalObservation,
    TerminalResetOptions,
    TerminalState,
    WriteFileAction,
)

__all__ = [
    "MODELS",
    "AnyTerminalAction",
    "InterruptAction",
    "ReadAction",
    "ReadFileAction",
    "RestartAction",
    "RunAction",
    "SendKeysAction",
    "SubmitAction",
    "TerminalAction",
    "TerminalEnv",
    "TerminalObservation",
    "TerminalResetOptions",
    "TerminalState",
    "WriteFileAction",
]
