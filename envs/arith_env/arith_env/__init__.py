"""Arith environment. Clients import the models; the server imports ``ArithEnv``."""

from .env import ArithEnv, make_problems, score
from .models import EASY, MODELS, ArithAction, ArithObservation, ArithOptions, ArithState

__all__ = [
    "EASY",
    "MODELS",
    "ArithAction",
    "ArithEnv",
    "ArithObservation",
    "ArithOptions",
    "ArithState",
    "make_problems",
    "score",
]
