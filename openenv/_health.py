"""One ``/health`` probe, and one cached liveness check, for every provider, pool and worker.

``health_error(url, timeout_s)`` asks ``GET {url}/health`` once: None when it answers
200, else why not. ``is_healthy`` is the same as a bool. ``CachedHealth`` trusts an
answer (or its absence) for ``HEALTH_TTL_S`` seconds before asking again, so a pool
that checks its replicas on every pick asks each server at most that often.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.error
import urllib.request

#: Seconds a ``/health`` answer (or its absence) is trusted before asking again
#: (``OPENENV_HEALTH_TTL_S``; one setting for every cached check).
HEALTH_TTL_S = float(os.environ.get("OPENENV_HEALTH_TTL_S", "0.5"))

__all__ = ["HEALTH_TTL_S", "CachedHealth", "health_error", "is_healthy"]


def health_error(base_url: str, timeout_s: float = 2.0) -> str | None:
    """None when ``{base_url}/health`` answers 200 within ``timeout_s``; else the reason."""
    if not base_url.startswith(("http://", "https://")):
        return f"not an http(s) URL: {base_url!r}"
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/health", timeout=timeout_s) as response:
            return None if response.status == 200 else f"HTTP {response.status}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return str(getattr(exc, "reason", exc))


def is_healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    """Whether ``{base_url}/health`` answers 200 within ``timeout_s``."""
    return health_error(base_url, timeout_s) is None


class CachedHealth:
    """``is_healthy(base_url)``, asked at most every ``HEALTH_TTL_S`` seconds (thread-safe);
    the first call asks."""

    def __init__(self, base_url: str, timeout_s: float = 1.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._checked_at: float | None = None
        self._healthy = False
        self._lock = threading.Lock()

    def __call__(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if self._checked_at is None or now - self._checked_at >= HEALTH_TTL_S:
                self._healthy = is_healthy(self.base_url, self.timeout_s)
                self._checked_at = time.monotonic()
            return self._healthy

    def forget(self) -> None:
        """Drop the last answer: the next call asks the server."""
        with self._lock:
            self._checked_at = None
