"""Env images on Kubernetes: the manifest ``openenv k8s IMAGE`` writes, and a
client-side pool over the replicas (a list of URLs or a headless Service's DNS name).

    >>> from openenv.k8s import K8sOptions, manifest, to_yaml
    >>> print(to_yaml(manifest(K8sOptions("openenv-echo", replicas=4))))  # doctest: +SKIP
"""

import typing as _typing

from .._exceptions import ReplicaLost
from .._lazy import lazy_exports as _lazy_exports
from ._manifest import PORT, K8sOptions, manifest, to_yaml
from ._pinned import PinnedClient
from ._pool import UrlPool
from ._remote import RemoteReplica, resolve

if _typing.TYPE_CHECKING:
    from ._pinned_async import PinnedAsyncClient

__all__ = [
    "PORT",
    "K8sOptions",
    "PinnedAsyncClient",
    "PinnedClient",
    "RemoteReplica",
    "ReplicaLost",
    "UrlPool",
    "manifest",
    "resolve",
    "to_yaml",
]


__getattr__, __dir__ = _lazy_exports(__name__, {"PinnedAsyncClient": "._pinned_async"}, __all__)
