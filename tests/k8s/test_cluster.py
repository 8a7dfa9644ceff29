"""Against a real cluster, only when ``KUBECONFIG`` names one: the API server accepts
``openenv k8s``'s manifest (a server-side dry run of ``kubectl apply``: admission and
schema checks, nothing created). This machine has no cluster, so here it skips."""

from __future__ import annotations

import os
from typing import Literal

import pytest

from openenv.k8s import K8sOptions, manifest

pytestmark = pytest.mark.skipif(
    not os.environ.get("KUBECONFIG"),
    reason="KUBECONFIG is not set: no Kubernetes cluster to dry-run the manifest against",
)


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet"])
def test_the_api_server_accepts_the_manifest(kind: Literal["Deployment", "StatefulSet"]) -> None:
    from kubernetes import config, utils
    from kubernetes.client import ApiClient

    config.load_kube_config()  # reads $KUBECONFIG
    namespace = os.environ.get("OPENENV_K8S_NAMESPACE", "default")
    api = ApiClient()
    for doc in manifest(K8sOptions("openenv-echo:latest", kind=kind, replicas=2)):
        # Server-side apply, as `kubectl apply --server-side --dry-run=server` sends it.
        created = utils.create_from_dict(api, doc, namespace=namespace, apply=True, dry_run="All")
        assert created, f"the API server answered nothing for {doc['kind']}"
