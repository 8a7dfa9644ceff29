"""Which wire dialect a request is written in, read from its route.

The four dialects agents speak, each on the route its official SDK calls:

    openai_chat        POST .../chat/completions
    openai_responses   POST .../responses
    anthropic          POST .../messages
    google             POST .../models/{model}:generateContent (or :streamGenerateContent)

The route decides; a body is never guessed at, so a request on any other route is an
``UnknownDialect`` (answered 404), not a chat completion that silently does nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from ._errors import UnknownDialect


class APIType(StrEnum):
    """A wire dialect (upstream's names and values)."""

    ANTHROPIC = "anthropic"
    OPENAI_CHAT = "openai_chat"
    OPENAI_RESPONSES = "openai_responses"
    GOOGLE = "google"


ROUTES = (
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/messages",
    "/v1beta/models/{model}:generateContent",
    "/v1beta/models/{model}:streamGenerateContent",
)


def detect(
    path: str, headers: Mapping[str, str] | None = None, body: Mapping[str, Any] | None = None
) -> APIType:
    """The dialect of a request on ``path`` (``headers`` and ``body`` are accepted as upstream's
    signature has them; the route alone decides).

    Raises:
        UnknownDialect: the route is none of ``ROUTES``.
    """
    route = path.split("?", 1)[0].rstrip("/")
    if route.endswith("/chat/completions"):
        return APIType.OPENAI_CHAT
    if route.endswith("/responses"):
        return APIType.OPENAI_RESPONSES
    if route.endswith("/messages"):
        return APIType.ANTHROPIC
    tail = route.rsplit("/", 1)[-1]
    if tail.endswith((":generateContent", ":streamGenerateContent")):
        return APIType.GOOGLE
    raise UnknownDialect(
        f"no model API on POST {route or '/'}: the capture proxy answers " + ", ".join(ROUTES)
    )


def google_model(path: str) -> str:
    """The model named in a generateContent route (``.../models/NAME:generateContent``)."""
    tail = path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return tail.split(":", 1)[0]
