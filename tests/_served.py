"""Wait for a server a test started as a child process: the product's one health wait
(``openenv.containers.wait_healthy``), failing with the child's output once it has exited."""

from __future__ import annotations

import subprocess
from typing import Any

from openenv.containers import wait_healthy


def wait_served(
    url: str, proc: subprocess.Popen[Any], timeout_s: float = 60.0, what: str = "the server"
) -> None:
    """Until ``{url}/health`` answers 200; ``StartupFailed`` (with the child's stderr, else
    its stdout, when it was piped) if ``proc`` exits first or ``timeout_s`` passes."""

    def output() -> str:  # read only once it has exited: a running server's pipe never ends
        pipe = proc.stderr or proc.stdout
        if proc.poll() is None or pipe is None:
            return "(still running)"
        text = pipe.read()
        return (text.decode(errors="replace") if isinstance(text, bytes) else text)[-3000:]

    wait_healthy(url, timeout_s=timeout_s, alive=lambda: proc.poll() is None, logs=output, what=what)
