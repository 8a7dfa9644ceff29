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
    #: The caller consented (``trust_remote_code``): the default Docker provider may pull
    #: an image that is not here. Without it an absent image is an error, never a pull.
    may_pull: bool = False

    def image(self, client_cls: Any, image: str) -> Any:
        """Run ``image`` and return a connected ``client_cls`` on it (``wait_timeout``
        bounds the default Docker provider's start; a given provider keeps its own)."""
        options: dict[str, Any] = {"env_vars": self.env_vars or {}, **self.options}
        if self.provider is None:
            options.setdefault("start_timeout_s", self.wait_timeout)
            if not self.may_pull:
                refuse_to_pull(image)
        handle = client_cls.from_docker_image(image, provider=self.provider, **options)
        return run_sync(handle, in_thread=True)

    def space(self, client_cls: Any, repo_id: str) -> Any:
        """Run Space ``repo_id``'s image here and return a connected ``client_cls`` on it."""
        options: dict[str, Any] = {"env_vars": self.env_vars or {}, **self.options}
        handle = client_cls.from_env(repo_id, use_docker=True, provider=self.provider, **options)
        return run_sync(handle, in_thread=True)


def refuse_to_pull(image: str) -> None:
    """Raise ``ProviderError`` when ``image`` is not in the local Docker engine: running it
    would pull code from a registry, which needs the caller's consent."""
    from .._exceptions import ProviderError
    from .._extras import require

    docker = require("docker", extra="docker", feature="running env containers")
    try:
        client = docker.from_env(timeout=10)
    except docker.errors.DockerException as exc:
        raise ProviderError(f"no Docker engine answers ({type(exc).__name__}): is dockerd running?") from None
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise ProviderError(
            f"image {image!r} is not here, and AutoEnv pulls an image only with consent: "
            "pass trust_remote_code=True (or set OPENENV_TRUST_REMOTE_CODE=1), "
            "or build it (openenv build ENV_FOLDER)"
        ) from None
    except docker.errors.DockerException:
        pass  # the engine cannot say: the provider's own start reports it
    finally:
        client.close()
