"""Start env servers as containers or processes, alone or as a pool of replicas.

Imported only when used: the Docker SDK loads on the first Docker call.
"""

from ._base import CONTAINER_PORT, Provider, Replica, wait_healthy
from ._build import DEFAULT_BASE_IMAGE, build_base, build_env_image
from ._docker import DockerProvider, DockerReplica, gc
from ._local import LocalProcessProvider, ProcessReplica
from ._pool import ReplicaPool

__all__ = [
    "CONTAINER_PORT",
    "DEFAULT_BASE_IMAGE",
    "DockerProvider",
    "DockerReplica",
    "LocalProcessProvider",
    "ProcessReplica",
    "Provider",
    "Replica",
    "ReplicaPool",
    "build_base",
    "build_env_image",
    "gc",
    "wait_healthy",
]
