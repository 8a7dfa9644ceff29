"""``openenv.core.containers``: upstream's import path for container providers."""

from .runtime import ContainerProvider, LocalDockerProvider, RuntimeProvider, UVProvider

__all__ = ["ContainerProvider", "LocalDockerProvider", "RuntimeProvider", "UVProvider"]
