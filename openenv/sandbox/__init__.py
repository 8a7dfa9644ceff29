"""Contained processes for envs that run untrusted code (terminal, coding).

A ``Sandbox`` is one session's private directory, uid and process trees::

    from openenv.sandbox import Sandbox, SandboxConfig

    with Sandbox(SandboxConfig(level="auto")) as box:        # or SandboxConfig.from_env()
        done = box.run(["python3", "-c", "print(6 * 7)"], timeout_s=10)
        assert done.stdout == b"42\\n"
        proc = box.popen(["bash"], stdin=PIPE, stdout=PIPE)  # long-lived; killed at close
        box.describe()   # {"requested": "auto", "level": "bwrap", "network": False, ...}

Layers, strongest first: bubblewrap (``Isolation.BWRAP``: no network, read-only
system, private ``/workspace`` and ``/tmp``, own PID namespace, dies with its
parent) where it works; always rlimits, an own process group killed as a whole, and
a private unprivileged uid per sandbox when the server runs as root. ``strict``
refuses to start without bubblewrap (``SandboxUnavailable``); ``auto`` falls back
to rlimits, and ``describe()`` says so. See ``docs/sandbox.md``.
"""

from .._exceptions import SandboxError, SandboxUnavailable
from ._buffer import HeadTail
from ._config import Isolation, Limits, SandboxConfig, SandboxLevel, SessionLimits, parse_level
from ._run import Completed
from ._sandbox import Sandbox, resolve_isolation

__all__ = [
    "Completed",
    "HeadTail",
    "Isolation",
    "Limits",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxLevel",
    "SandboxUnavailable",
    "SessionLimits",
    "parse_level",
    "resolve_isolation",
]
