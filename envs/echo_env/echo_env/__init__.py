"""Echo environment. Clients import the models; the server imports ``EchoEnv``."""

from .env import EchoEnv
from .models import MODELS, EchoAction, EchoObservation, EchoState

__all__ = ["MODELS", "EchoAction", "EchoEnv", "EchoObservation", "EchoState"]
