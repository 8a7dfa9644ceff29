"""Upstream's provider interfaces over ``openenv.containers``.

``LocalDockerProvider`` runs an image with our ``DockerProvider`` (labels, cleanup,
startup logs on failure); ``UVProvider`` runs a uv project with ``uv run`` as a local
process that our ``ProcessReplica`` watches. The cloud providers (Daytona, Modal,
Kubernetes, Swarm...) are not provided.
"""

from .providers import ContainerProvider, LocalDockerProvider, RuntimeProvider
from .uv_provider import UVProvider

__all__ = ["ContainerProvider", "LocalDockerProvider", "RuntimeProvider", "UVProvider"]
