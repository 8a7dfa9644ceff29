"""Upstream's server exceptions, in our one tree (``openenv.server._upstream_models``)."""

from ...server._upstream_models import (
    ConcurrencyConfigurationError,
    EnvironmentFactoryError,
    OpenEnvError,
    SessionCapacityError,
    SessionCreationError,
    SessionNotFoundError,
)

__all__ = [
    "ConcurrencyConfigurationError", "EnvironmentFactoryError", "OpenEnvError", "SessionCapacityError",
    "SessionCreationError", "SessionNotFoundError",
]
