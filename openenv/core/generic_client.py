"""Upstream's ``GenericEnvClient``: our dict-in, dict-out hook client, for any env server."""

from ..client._hooks_ready import DictAction, DictEnvClient

__all__ = ["GenericAction", "GenericEnvClient"]


class GenericEnvClient(DictEnvClient):
    """Observations and states as dicts; actions as dicts (or models, dumped)."""


class GenericAction(DictAction):
    """A dict built from keyword arguments: ``GenericAction(message="hi")``."""
