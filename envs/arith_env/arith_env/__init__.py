"""Arith environment. Clients import the models; the server imports ``ArithEnv``."""

from .env import ArithEnv, make_problems, score
from .models import MODELS, ArithAction, ArithObservation, ArithOptions, ArithState

__all__ = [
    "MODELS",
    "ArithAction",
    "ArithEnv",
    "ArithObservation",
    "ArithOptions",
    "ArithState",
    "make_problems",
    "score",
]
