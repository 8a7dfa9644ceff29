"""Env images on Kubernetes: the manifest ``openenv k8s IMAGE`` writes, and a
client-side pool over the replicas (a list of URLs or a headless Service's DNS name).

    >>> from openenv.k8s import K8sOptions, manifest, to_yaml
    >>> print(to_yaml(manifest(K8sOptions("openenv-echo", replicas=4))))  # doctest: +SKIP
"""

from .._exceptions import ReplicaLost
from ._manifest import PORT, K8sOptions, manifest, to_yaml
from ._pool import PinnedClient, RemoteReplica, UrlPool, resolve

__all__ = [
    "PORT",
    "K8sOptions",
    "PinnedClient",
    "RemoteReplica",
    "ReplicaLost",
    "UrlPool",
    "manifest",
    "resolve",
    "to_yaml",
]
