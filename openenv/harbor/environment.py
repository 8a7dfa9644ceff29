"""``HarborEnvironment``: the terminal env serving Harbor tasks, under upstream's name.

``configure(datasets=[...])`` sets what every session serves: a folder of task folders,
a Harbor dataset folder (``dataset.toml``), a local registry file or ``name@version``
from ``OPENENV_HARBOR_REGISTRY`` (the first given; see docs/harbor.md, "Datasets"). The
Task API (``/{name}/splits``, ``tasks``, ``task``, ...) is the terminal env's; upstream's
MCP tools ``run_rollout`` and ``list_tasks`` are answered as ``call_tool`` steps
(``terminal_env._harbor_tools``): a rollout is one ``openenv eval`` episode the server
plays against itself, so upstream's ``HarborEnv`` client drives it unchanged.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

HarborToolEnv: Any = importlib.import_module("terminal_env._harbor_tools").HarborToolEnv
HarborTaskSet: Any = importlib.import_module("terminal_env._harbor_tools").HarborToolTaskSet


class HarborEnvironment(HarborToolEnv):  # type: ignore[misc]
    """The terminal env, its tasks set by ``configure``, answering upstream's Harbor tools."""

    _datasets: ClassVar[list[str]] = []

    @classmethod
    def configure(cls, *, datasets: list[str], **_upstream_only: Any) -> None:
        """Serve ``datasets[0]`` (upstream's LLM settings have no counterpart here)."""
        cls._datasets, cls.task_set = list(datasets), HarborTaskSet(datasets[0])
