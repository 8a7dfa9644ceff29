"""Terminal environment. Clients import the models; the server imports ``TerminalEnv``."""

from . import models
from .env import TerminalEnv
from .models import *  # noqa: F403  (the models' names, listed once in models.__all__)

__all__ = ["TerminalEnv", *models.__all__]
