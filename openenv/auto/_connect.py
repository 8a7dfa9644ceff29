"""Reaching env servers for ``AutoEnv``: health probes and starting containers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._aio import run_sync
from .._health import is_healthy as is_healthy  # AutoEnv._check_server_availability asks it


@dataclass
class Launcher:
    """How to start an env here: the container provider (Docker when None), how long
    the default provider may take, the env vars and extra options to pass on."""

    provider: Any = None
    wait_timeout: float = 30.0
    env_vars: dict[str, str] | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def image(self, client_cls: Any, image: str) -> Any:
        """Run ``image`` and return a connected ``client_cls`` on it (``wait_timeout``
        bounds the default Docker provider's start; a given provider keeps its own)."""
        options: dict[str, Any] = {"env_vars": self.env_vars or {}, **self.options}
        if self.provider is None:
            options.setdefault("start_timeout_s", self.wait_timeout)
        handle = client_cls.from_docker_image(image, provider=self.provider, **options)
        return run_sync(handle, in_thread=True)

    def space(self, client_cls: Any, repo_id: str) -> Any:
        """Run Space ``repo_id``'s image here and return a connected ``client_cls`` on it."""
        options: dict[str, Any] = {"env_vars": self.env_vars or {}, **self.options}
        handle = client_cls.from_env(repo_id, use_docker=True, provider=self.provider, **options)
        return run_sync(handle, in_thread=True)
