"""reasoning-gym environment. Clients import the models; the server imports ``ReasoningGymEnv``."""

from .env import ReasoningGymEnv, families
from .models import MODELS, RGAction, RGObservation, RGOptions, RGState

__all__ = ["MODELS", "RGAction", "RGObservation", "RGOptions", "RGState", "ReasoningGymEnv", "families"]
