"""Sessions: one per rollout, named by the API key the agent is given.

``POST /sessions`` mints an id; the agent's SDK is configured with that id as its API
key, so every call it makes lands in its own session without the agent knowing. The
key is read where each SDK puts it: ``Authorization: Bearer``, ``x-api-key``
(Anthropic), ``x-goog-api-key`` or ``?key=`` (Google).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._graph import RolloutGraph

LEVELS = ("text", "logprobs", "tokens")  # what a backend returns, weakest first


def lowest(a: str, b: str) -> str:
    """The weaker of two capture levels."""
    return a if LEVELS.index(a) <= LEVELS.index(b) else b


def extract_api_key(headers: Mapping[str, str], query: Mapping[str, str] | None = None) -> str | None:
    """The API key a request carries, wherever its SDK put it."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return headers.get("x-api-key") or headers.get("x-goog-api-key") or (query or {}).get("key") or None


@dataclass
class Session:
    """One rollout: its calls' graph, the level they were captured at, what went wrong."""

    session_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    graph: RolloutGraph = field(default_factory=RolloutGraph)
    capture_level: str = "tokens"
    findings: list[str] = field(default_factory=list)
    upstream_errors: int = 0
    created: float = field(default_factory=time.time)
    last_call: float = 0.0
    incomplete: list[dict[str, Any]] = field(default_factory=list)  # streams cut halfway: what they had

    def note(self, finding: str) -> None:
        self.findings.append(finding)

    def summary(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "capture_level": self.capture_level,
            "upstream_errors": self.upstream_errors,
            "incomplete_calls": len(self.incomplete),
            "idle_s": round(time.time() - (self.last_call or self.created), 1),
            **self.graph.stats(),
        }


class SessionRegistry:
    """The live sessions, by id."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    def create(
        self, session_id: str | None = None, *, capture_level: str = "tokens", **metadata: Any
    ) -> Session:
        sid = session_id or f"cap-{secrets.token_urlsafe(18)}"
        if sid in self._sessions:
            raise ValueError(f"session {sid!r} exists")
        session = Session(sid, metadata=dict(metadata), capture_level=capture_level)
        self._sessions[sid] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        return self._sessions.get(session_id) if session_id else None

    def resolve(self, headers: Mapping[str, str], query: Mapping[str, str] | None = None) -> Session | None:
        """The session a proxied request belongs to, by its API key."""
        return self.get(extract_api_key(headers, query))

    def delete(self, session_id: str) -> bool:
        return self._sessions.pop(session_id, None) is not None

    def list_ids(self) -> list[str]:
        return list(self._sessions)

    def summary(self) -> list[dict[str, Any]]:
        return [s.summary() for s in self._sessions.values()]
