from .client import CounterEnv
from .models import CounterAction, CounterObservation, CounterState

__all__ = ["CounterAction", "CounterEnv", "CounterObservation", "CounterState"]
