from openenv.core.env_server.types import Action, Observation, State


class CountAction(Action):
    add: int = 1


class CountObservation(Observation):
    total: int = 0


class CountState(State):
    total: int = 0
