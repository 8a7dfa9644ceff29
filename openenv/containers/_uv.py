"""``UVProvider``: run an env's uv project (a folder or a ``git+URL``) with ``uv run``."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Any

from .._exceptions import ProviderError
from ._local import ProcessReplica, free_port
from ._runtime import RuntimeProvider

__all__ = ["UVProvider"]


class UVProvider(RuntimeProvider):
    """``uv run --isolated --project PATH -- uvicorn APP --host H --port P``, as a process.

    Args:
        project_path: a uv project folder, or ``git+URL`` (cloned, shallow, on ``start``).
        app: the ASGI app for uvicorn.
        host: the interface to bind (``127.0.0.1`` by default, unlike upstream's ``0.0.0.0``).
        reload: uvicorn's ``--reload``.
        env_vars: extra environment variables for the process.
        context_timeout_s: how long ``wait_for_ready`` waits by default.
    """

    def __init__(
        self,
        project_path: str,
        app: str = "server.app:app",
        host: str = "127.0.0.1",
        reload: bool = False,
        env_vars: dict[str, str] | None = None,
        context_timeout_s: float = 60.0,
    ) -> None:
        if shutil.which("uv") is None:
            raise ProviderError("UVProvider needs `uv` on PATH (https://docs.astral.sh/uv/)")
        self.project_path = project_path
        self.app = app
        self.host = host
        self.reload = reload
        self.env_vars = dict(env_vars or {})
        self.context_timeout_s = context_timeout_s
        self._replica: ProcessReplica | None = None
        self._clone: str | None = None

    def command(self, port: int, workers: int = 1, project: str | None = None) -> list[str]:
        """The command line ``start`` runs."""
        argv = ["uv", "run", "--isolated", "--project", project or self.project_path, "--"]
        argv += ["uvicorn", self.app, "--host", self.host, "--port", str(port), "--workers", str(workers)]
        return argv + (["--reload"] if self.reload else [])

    def start(
        self,
        port: int | None = None,
        env_vars: dict[str, str] | None = None,
        workers: int = 1,
        **kwargs: Any,
    ) -> str:
        if kwargs:
            raise TypeError(f"start() got options it does not know: {', '.join(sorted(kwargs))}")
        if self._replica is not None:
            raise RuntimeError("already started: stop() first")
        project = self._checkout()
        port = port or free_port(self.host)
        fd, log_path = tempfile.mkstemp(prefix="openenv-uv-", suffix=".log")
        with os.fdopen(fd, "wb") as log:
            proc = subprocess.Popen(
                self.command(port, workers, project),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env_vars, **(env_vars or {})},
                start_new_session=True,
            )
        shown = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        self._replica = ProcessReplica(proc, f"http://{shown}:{port}", log_path)
        return self._replica.base_url

    def _checkout(self) -> str:
        if not self.project_path.startswith("git+"):
            return self.project_path
        self._clone = tempfile.mkdtemp(prefix="openenv-uv-clone-")
        url = self.project_path[len("git+") :]
        done = subprocess.run(
            ["git", "clone", "--depth", "1", url, self._clone], capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            shutil.rmtree(self._clone, ignore_errors=True)
            self._clone = None
            raise ProviderError(f"git clone {url} failed: {done.stderr.strip()[-500:]}")
        return self._clone

    def wait_for_ready(self, timeout_s: float | None = None) -> None:
        if self._replica is None:
            raise RuntimeError("not started")
        self._replica.wait_ready(self.context_timeout_s if timeout_s is None else timeout_s, "uv run")

    def stop(self) -> None:
        replica, self._replica = self._replica, None
        try:
            if replica is not None:
                replica.stop()
        finally:
            if self._clone is not None:
                shutil.rmtree(self._clone, ignore_errors=True)
                self._clone = None

    @property
    def base_url(self) -> str:
        if self._replica is None:
            raise RuntimeError("not started")
        return self._replica.base_url
