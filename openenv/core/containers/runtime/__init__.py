"""Upstream's provider interfaces: ours in ``openenv.containers``.

``LocalDockerProvider`` runs an image with our ``DockerProvider`` (labels, cleanup,
startup logs on failure); ``UVProvider`` runs a uv project with ``uv run`` as a local
process that our ``ProcessReplica`` watches. The cloud providers (Daytona, Modal,
Kubernetes, Swarm...) are not provided.
"""

from ....containers import ContainerProvider, LocalDockerProvider, RuntimeProvider, UVProvider

__all__ = ["ContainerProvider", "LocalDockerProvider", "RuntimeProvider", "UVProvider"]
