"""``HarborEnvironment``: the terminal env serving Harbor tasks, under upstream's name.

``configure(datasets=[...])`` sets what every session serves: a folder of task folders,
a Harbor dataset folder (``dataset.toml``), a local registry file or ``name@version``
from ``OPENENV_HARBOR_REGISTRY`` (the first given; see docs/harbor.md, "Datasets"). The
Task API (``/{name}/splits``, ``tasks``, ``task``, ...) is the terminal env's; a
rollout is driven from the client (``HarborEnv.run_rollout``), not by a server tool.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

TerminalEnv: Any = importlib.import_module("terminal_env").TerminalEnv
HarborTaskSet: Any = importlib.import_module("terminal_env._tasks").HarborTaskSet


class HarborEnvironment(TerminalEnv):  # type: ignore[misc]
    """The terminal env, its tasks set by ``configure``."""

    _datasets: ClassVar[list[str]] = []

    @classmethod
    def configure(cls, *, datasets: list[str], **_upstream_only: Any) -> None:
        """Serve ``datasets[0]`` (upstream's LLM settings have no counterpart here)."""
        cls._datasets, cls.task_set = list(datasets), HarborTaskSet(datasets[0])
