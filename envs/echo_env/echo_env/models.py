"""Echo env models: data only, importable by clients without the server."""

from pydantic import Field

from openenv import Action, EnvModels, Observation, State


class EchoAction(Action):
    """Send a message; the env echoes it back."""

    message: str = Field(max_length=65536)


class EchoObservation(Observation):
    """The echoed message and its length."""

    echoed_message: str = ""
    message_length: int = 0


class EchoState(State):
    """Episode state plus the total characters echoed so far."""

    total_chars: int = 0


MODELS = EnvModels(EchoAction, EchoObservation, EchoState)
