from pydantic import Field

from openenv.core.env_server.types import Action, Observation, State


class CounterAction(Action):
    add: int = Field(default=1, description="How much to add to the counter")


class CounterObservation(Observation):
    total: int = 0


class CounterState(State):
    total: int = 0
