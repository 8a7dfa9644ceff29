"""Start env servers as containers or processes, alone or as a pool of replicas.

Imported only when used: the Docker SDK loads on the first Docker call, Monarch on the
first use of ``MonarchProvider`` or ``MonarchReplicaPool``.
"""

from __future__ import annotations

import typing as _typing

from openenv._lazy import lazy_exports as _lazy_exports

from ._base import CONTAINER_PORT, Provider, Replica, ReplicaBase, wait_healthy
from ._build import DEFAULT_BASE_IMAGE, build_base, build_env_image
from ._docker import DockerProvider, DockerReplica
from ._docker_admin import ContainerInfo, containers, gc, gc_images, stop_container
from ._local import LocalProcessProvider, ProcessReplica
from ._pool import PoolLease, ReplicaPool
from ._runtime import ContainerProvider, LocalDockerProvider, ProviderHandle, RuntimeProvider
from ._uv import UVProvider

__all__ = [
    "CONTAINER_PORT",
    "DEFAULT_BASE_IMAGE",
    "ContainerInfo",
    "ContainerProvider",
    "DockerProvider",
    "DockerReplica",
    "LocalDockerProvider",
    "LocalProcessProvider",
    "MonarchProvider",
    "MonarchReplicaPool",
    "PoolLease",
    "ProcessReplica",
    "Provider",
    "ProviderHandle",
    "Replica",
    "ReplicaBase",
    "ReplicaPool",
    "RuntimeProvider",
    "UVProvider",
    "build_base",
    "build_env_image",
    "containers",
    "gc",
    "gc_images",
    "stop_container",
    "wait_healthy",
]


if _typing.TYPE_CHECKING:
    from ._monarch import MonarchProvider, MonarchReplicaPool


# Monarch only when asked for
__getattr__, __dir__ = _lazy_exports(
    __name__, {"MonarchProvider": "._monarch", "MonarchReplicaPool": "._monarch"}, __all__
)
