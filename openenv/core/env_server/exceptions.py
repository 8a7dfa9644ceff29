"""Upstream's server exceptions, placed in our one exception tree.

Each keeps upstream's constructor and attributes and subclasses the error of ours
that means the same, so ``except openenv.CapacityReached`` catches upstream's
``SessionCapacityError`` and our server sends it with the same wire code.
"""

from __future__ import annotations

from ..._exceptions import CapacityReached, FactoryError, OpenEnvError, SessionError, SessionNotFound

__all__ = [
    "ConcurrencyConfigurationError",
    "EnvironmentFactoryError",
    "OpenEnvError",
    "SessionCapacityError",
    "SessionCreationError",
    "SessionNotFoundError",
]


class ConcurrencyConfigurationError(OpenEnvError, ValueError):
    """More than one concurrent session asked of an env that does not declare
    ``SUPPORTS_CONCURRENT_SESSIONS = True``."""

    def __init__(self, environment_name: str, max_concurrent_envs: int, message: str | None = None) -> None:
        self.environment_name = environment_name
        self.max_concurrent_envs = max_concurrent_envs
        super().__init__(
            message
            or (
                f"Environment '{environment_name}' is not marked as SUPPORTS_CONCURRENT_SESSIONS. "
                f"Cannot run with max_concurrent_envs={max_concurrent_envs}. Either set "
                "max_concurrent_envs=1 or ensure the environment properly isolates session state "
                "and set SUPPORTS_CONCURRENT_SESSIONS=True."
            )
        )


class SessionCapacityError(CapacityReached):
    """Every session slot is taken (wire code ``CAPACITY_REACHED``)."""

    def __init__(self, active_sessions: int, max_sessions: int, message: str | None = None) -> None:
        self.active_sessions = active_sessions
        self.max_sessions = max_sessions
        super().__init__(
            message
            or f"Server at capacity: {active_sessions}/{max_sessions} sessions active. "
            "Cannot accept new connections.",
            active_sessions=active_sessions,
            max_sessions=max_sessions,
        )


class SessionNotFoundError(SessionNotFound):
    def __init__(self, session_id: str, message: str | None = None) -> None:
        self.session_id = session_id
        super().__init__(message or f"Session '{session_id}' not found.", session_id=session_id)


class SessionCreationError(SessionError):
    def __init__(self, reason: str, message: str | None = None) -> None:
        self.reason = reason
        super().__init__(message or f"Failed to create session: {reason}", reason=reason)


class EnvironmentFactoryError(FactoryError):
    def __init__(self, factory_name: str, message: str | None = None) -> None:
        self.factory_name = factory_name
        super().__init__(
            message or f"Environment factory '{factory_name}' failed to create instance.",
            factory_name=factory_name,
        )
