"""The capture proxy's errors, under the project's one root (``openenv.OpenEnvError``).

OpenEnvError
└── CaptureError                  openenv.capture: a request or export the proxy refuses
    ├── UnknownDialect            the request is in none of the four dialects; also a ValueError
    ├── BadRequest                the request is in a dialect but malformed; also a ValueError
    ├── NotTrainable              an export asked of a rollout without token ids; also a ValueError
    └── UpstreamError             the backend could not be reached, or refused, or cut its reply
"""

from __future__ import annotations

from .._exceptions import OpenEnvError


class CaptureError(OpenEnvError):
    """openenv.capture refused a request or an export."""


class UnknownDialect(CaptureError, ValueError):
    """The request's route is none of chat completions, Responses, Messages or generateContent."""


class BadRequest(CaptureError, ValueError):
    """The request is in a known dialect but cannot be read (not JSON, no messages, ...)."""


class NotTrainable(CaptureError, ValueError):
    """A training export asked of a rollout whose calls carry no token ids or logprobs."""


class UpstreamError(CaptureError):
    """The backend failed a call: unreachable, an error status, or a reply cut short.

    ``status`` is the HTTP status the agent gets: the backend's own for a 4xx, 502 otherwise.
    """

    def __init__(self, message: str, *, status: int = 502, backend_status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.backend_status = backend_status
