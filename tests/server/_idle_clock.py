"""A clock for the idle reaper that moves only when the test moves it.

The session manager and the WebSocket handler read ``time.monotonic()`` to judge how
long a session (or a connection without one) has been quiet. ``IdleClock`` stands in
for their ``time`` module: ``monotonic()`` returns a value that only ``advance(s)``
changes, everything else is the real module. A test then says "0.3 s pass with no
call" and waits for the reaper's next whole pass, instead of sleeping and hoping the
host ran each call within the timeout (a loaded host stalled a client past it).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from openenv.server import _sessions, _ws

from ..conftest import wait_until


class IdleClock:
    """``monotonic()`` frozen but for ``advance``; ``settle(manager)`` waits for a whole
    reaper pass that started after the last advance."""

    def __init__(self) -> None:
        self.now = time.monotonic()
        self.passes = 0

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def watch(self, manager: Any) -> None:
        """Count ``manager``'s reaper passes (its loop calls ``self.reap_idle()``)."""
        real = manager.reap_idle

        async def counted() -> int:
            try:
                return int(await real())
            finally:
                self.passes += 1

        manager.reap_idle = counted

    def settle(self) -> None:
        """Until a reaper pass has begun and ended since this call (bounded)."""
        seen = self.passes
        wait_until(lambda: self.passes >= seen + 2, timeout_s=10, what="two reaper passes")


@pytest.fixture
def idle_clock(monkeypatch: pytest.MonkeyPatch) -> IdleClock:
    clock = IdleClock()
    monkeypatch.setattr(_sessions, "time", clock)
    monkeypatch.setattr(_ws, "time", clock)
    return clock
