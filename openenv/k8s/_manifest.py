"""The Kubernetes objects that serve one env image: a workload and a headless Service.

Plain dicts (what ``kubectl apply`` reads), built from ``K8sOptions``. The pods:
probes on ``/health``; requests and limits; a ``preStop`` sleep so the endpoints
controller removes a terminating pod from the Service before it gets SIGTERM (the
server then shuts down gracefully: uvicorn finishes requests in flight, every session
closes); a non-root, no-capability security context on a read-only root filesystem
(the env servers write only to ``/tmp``, an ``emptyDir`` here; ``writable`` adds
others). ``root`` is for images that run as root by design, with a few capabilities.
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

#: The port env servers listen on inside their image (``OPENENV_PORT`` of the base image).
PORT = 8000
#: What a root server that switches each session's worker to its own uid needs (tested
#: with ``openenv-coding``): set uids, own and reach the per-session folders, kill workers.
ROOT_CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"]
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class K8sOptions:
    """What ``openenv k8s`` writes; the defaults suit one echo-sized env per pod."""

    image: str
    name: str = ""
    replicas: int = 1
    kind: Literal["Deployment", "StatefulSet"] = "Deployment"
    namespace: str | None = None
    cpu_request: str = "250m"
    cpu_limit: str = "1"
    memory_request: str = "256Mi"
    memory_limit: str = "1Gi"
    drain_s: int = 5
    start_timeout_s: int = 120
    max_sessions: int | None = None
    #: Extra writable paths (``emptyDir`` mounts) besides ``/tmp``, e.g. a cache folder.
    writable: tuple[str, ...] = ()
    #: For images whose server runs as root by design (``openenv-coding`` gives each
    #: session's worker its own uid): uid 0 with only the capabilities that needs.
    root: bool = False

    def resolved_name(self) -> str:
        """``name``, else the image's last path part without its tag (``openenv-echo``)."""
        if self.name:
            return self.name
        base = self.image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]
        return re.sub(r"[^a-z0-9-]+", "-", base.lower()).strip("-") or "openenv-env"


def manifest(options: K8sOptions) -> list[dict[str, Any]]:
    """The Service and the workload, in the order ``kubectl apply`` should create them.

    Raises ``ValueError`` on a name Kubernetes would refuse or counts below their minimum.
    """
    name = options.resolved_name()
    if len(name) > 63 or not _NAME.match(name):
        raise ValueError(f"{name!r} is not a Kubernetes name (lowercase letters, digits, '-'; <= 63)")
    if options.replicas < 1:
        raise ValueError("--replicas must be at least 1")
    if options.drain_s < 0:
        raise ValueError("--drain must be >= 0 seconds")
    if options.start_timeout_s < 2:
        raise ValueError("--start-timeout must be >= 2 seconds")
    for path in options.writable:
        if not path.startswith("/") or path.rstrip("/") in ("", "/tmp"):
            raise ValueError(f"--writable {path!r}: an absolute path other than / and /tmp")
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "openenv"}
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if options.namespace:
        meta["namespace"] = options.namespace
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            # Headless: DNS answers every ready pod's address; clients pick (openenv.k8s.UrlPool).
            "clusterIP": "None",
            "selector": {"app.kubernetes.io/name": name},
            "ports": [{"name": "http", "port": PORT, "targetPort": "http"}],
        },
    }
    spec: dict[str, Any] = {
        "replicas": options.replicas,
        "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
        "template": {"metadata": {"labels": labels}, "spec": _pod_spec(name, options)},
    }
    if options.kind == "StatefulSet":
        spec["serviceName"] = name
        spec["podManagementPolicy"] = "Parallel"
    workload = {"apiVersion": "apps/v1", "kind": options.kind, "metadata": meta, "spec": spec}
    return [service, workload]


def _pod_spec(name: str, options: K8sOptions) -> dict[str, Any]:
    health = {"httpGet": {"path": "/health", "port": "http"}}
    env = [{"name": "OPENENV_HOST", "value": "0.0.0.0"}, {"name": "OPENENV_PORT", "value": str(PORT)}]
    if options.max_sessions is not None:
        env.append({"name": "OPENENV_MAX_SESSIONS", "value": str(options.max_sessions)})
    mounts = [("tmp", "/tmp")] + [(f"writable-{i}", p.rstrip("/")) for i, p in enumerate(options.writable)]
    uid = 0 if options.root else 1000
    container = {
        "name": "env",
        "image": options.image,
        "ports": [{"name": "http", "containerPort": PORT}],
        "env": env,
        "readinessProbe": {**health, "periodSeconds": 2, "failureThreshold": 2},
        # Liveness and readiness start once the startup probe has passed: a slow env
        # (a browser) gets start_timeout_s to come up before liveness may restart it.
        "startupProbe": {**health, "periodSeconds": 2, "failureThreshold": -(-options.start_timeout_s // 2)},
        "livenessProbe": {**health, "periodSeconds": 10, "failureThreshold": 3},
        "resources": {
            "requests": {"cpu": options.cpu_request, "memory": options.memory_request},
            "limits": {"cpu": options.cpu_limit, "memory": options.memory_limit},
        },
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", str(options.drain_s)]}}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"], **({"add": ROOT_CAPABILITIES} if options.root else {})},
        },
        "volumeMounts": [{"name": name, "mountPath": path} for name, path in mounts],
    }
    return {
        "containers": [container],
        # preStop drain, then uvicorn's 5 s graceful shutdown, then a margin.
        "terminationGracePeriodSeconds": options.drain_s + 15,
        "automountServiceAccountToken": False,
        "securityContext": {
            "runAsNonRoot": not options.root,
            "runAsUser": uid,
            "runAsGroup": uid,
            "fsGroup": uid,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumes": [{"name": name, "emptyDir": {}} for name, _ in mounts],
    }


def to_yaml(documents: list[dict[str, Any]]) -> str:
    """A multi-document YAML stream: PyYAML's block style when installed, else JSON
    documents (JSON is YAML, and ``kubectl apply -f`` reads either)."""
    documents = json.loads(json.dumps(documents))  # no shared objects: no YAML anchors
    try:
        yaml = importlib.import_module("yaml")  # PyYAML, when an extra brought it
    except ImportError:
        return "".join(f"---\n{json.dumps(doc, indent=2)}\n" for doc in documents)
    return str(yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True))
