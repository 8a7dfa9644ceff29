"""SIGTERM ends the server within its graceful period, whatever its threads are doing.

uvicorn stops on the first SIGTERM (or SIGINT): it stops accepting, waits up to its
graceful period (``GRACE_S``) for requests in flight, then runs the app's shutdown
(every session closed, every sandbox killed). What runs after that is out of its
hands: a thread still inside an env call, a start of a sandbox, the interpreter's exit
joining worker threads. On a loaded host those took the coding server 6-11 s past the
signal. So the first signal also arms an ``ExitDeadline``: ``EXIT_MARGIN_S`` after the
graceful period the process ends (``os._exit``) if it is still there. Status 0 when the
app's shutdown had finished (only stray threads were left: what they held is closed),
1 when it had not (what it did not close, the next start reclaims).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

__all__ = ["EXIT_MARGIN_S", "GRACE_S", "ExitDeadline"]

log = logging.getLogger("openenv.server")

#: uvicorn's ``timeout_graceful_shutdown`` in ``openenv serve``.
GRACE_S = 5.0
#: The process is gone this long after the graceful period at the latest.
EXIT_MARGIN_S = 0.6


class ExitDeadline:
    """A daemon thread, started now (no thread is started from a signal handler), that
    ends the process ``seconds`` after ``arm`` unless ``disarm`` comes first."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = GRACE_S + EXIT_MARGIN_S if seconds is None else seconds
        self.shut_down = False  # the app's shutdown finished
        self._armed = threading.Event()
        self._disarmed = threading.Event()
        threading.Thread(target=self._run, name="openenv-exit-deadline", daemon=True).start()

    def arm(self) -> None:
        """Start the clock (safe in a signal handler; again is a no-op)."""
        self._armed.set()

    def disarm(self) -> None:
        self._disarmed.set()
        self._armed.set()

    def on_signal(self, server: Any) -> None:
        """Arm when uvicorn's ``server`` takes its first stop signal."""
        handle = getattr(server, "handle_exit", None)
        if handle is None:
            return

        def handle_exit(sig: int, frame: Any) -> None:
            self.arm()
            handle(sig, frame)

        server.handle_exit = handle_exit

    def _run(self) -> None:
        self._armed.wait()
        if self._disarmed.wait(self.seconds):
            return
        if self.shut_down:
            log.warning("threads still ran %.1f s after the stop signal; exiting without them", self.seconds)
            os._exit(0)
        log.error("the shutdown did not finish within %.1f s of the stop signal; exiting now", self.seconds)
        os._exit(1)
