"""``openenv k8s IMAGE``: the manifest, read back through the official ``kubernetes``
client's models (what ``kubectl apply`` would send), and the command's output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient  # the dev extra's official client: its models are the schema

from openenv.k8s import K8sOptions, manifest, to_yaml


def model(doc: dict[str, Any]) -> Any:
    """``doc`` as the client's model of its kind (V1Service, V1Deployment...)."""
    return ApiClient().deserialize(json.dumps(doc), f"V1{doc['kind']}", "application/json")


def round_trips(doc: dict[str, Any]) -> bool:
    """Every field survives model -> dict: none was unknown to the schema or misspelled."""
    return bool(ApiClient().sanitize_for_serialization(model(doc)) == json.loads(json.dumps(doc)))


def test_deployment_and_headless_service_are_valid_kubernetes_objects() -> None:
    service, deployment = manifest(K8sOptions("registry.example/openenv-echo:1", replicas=3))
    assert round_trips(service)
    assert round_trips(deployment)

    svc = model(service)
    assert svc.spec.cluster_ip == "None"  # headless: DNS answers every pod's address
    assert svc.spec.selector == {"app.kubernetes.io/name": "openenv-echo"}
    assert svc.spec.ports[0].port == 8000

    dep = model(deployment)
    assert dep.metadata.name == "openenv-echo"
    assert dep.spec.replicas == 3
    assert dep.spec.selector.match_labels.items() <= dep.spec.template.metadata.labels.items()
    pod = dep.spec.template.spec
    (c,) = pod.containers
    assert c.image == "registry.example/openenv-echo:1"
    assert c.ports[0].container_port == 8000
    assert c.ports[0].name == "http"
    assert c.startup_probe.period_seconds * c.startup_probe.failure_threshold == 120
    for probe in (c.startup_probe, c.readiness_probe, c.liveness_probe):
        assert probe.http_get.path == "/health"
        assert probe.http_get.port == "http"
    assert c.resources.requests == {"cpu": "250m", "memory": "256Mi"}
    assert c.resources.limits == {"cpu": "1", "memory": "1Gi"}
    assert c.lifecycle.pre_stop._exec.command == ["sleep", "5"]
    assert pod.termination_grace_period_seconds > 5  # the drain fits in the grace period
    assert pod.security_context.run_as_non_root is True
    assert pod.security_context.run_as_user == 1000
    assert c.security_context.allow_privilege_escalation is False
    assert c.security_context.capabilities.drop == ["ALL"]
    assert c.security_context.read_only_root_filesystem is True
    assert [m.mount_path for m in c.volume_mounts] == ["/tmp"]  # the one writable path
    assert pod.volumes[0].empty_dir is not None


def test_statefulset_names_its_headless_service_and_options_reach_the_pod() -> None:
    options = K8sOptions(
        "openenv-coding", name="coder", kind="StatefulSet", replicas=2, namespace="rl",
        cpu_request="2", cpu_limit="4", memory_request="1Gi", memory_limit="2Gi", drain_s=10,
        max_sessions=64, start_timeout_s=301,
    )
    service, sts = manifest(options)
    assert round_trips(sts)
    s = model(sts)
    assert s.kind == "StatefulSet"
    assert s.spec.service_name == service["metadata"]["name"] == "coder"
    assert s.metadata.namespace == service["metadata"]["namespace"] == "rl"
    (c,) = s.spec.template.spec.containers
    assert c.resources.limits == {"cpu": "4", "memory": "2Gi"}
    assert ("OPENENV_MAX_SESSIONS", "64") in [(e.name, e.value) for e in c.env]
    assert c.lifecycle.pre_stop._exec.command == ["sleep", "10"]
    assert s.spec.template.spec.termination_grace_period_seconds >= 10 + 5
    assert c.startup_probe.period_seconds * c.startup_probe.failure_threshold >= 301


def test_root_images_get_uid_0_a_few_capabilities_and_extra_writable_folders() -> None:
    # openenv-coding runs as root by design (a uid per session's worker) and caches
    # datasets under /root/.cache; checked with Docker under these settings.
    _, deployment = manifest(K8sOptions("openenv-coding", root=True, writable=("/root/.cache/",)))
    assert round_trips(deployment)
    pod = model(deployment).spec.template.spec
    (c,) = pod.containers
    assert pod.security_context.run_as_non_root is False
    assert pod.security_context.run_as_user == 0
    assert c.security_context.capabilities.drop == ["ALL"]
    added = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"]
    assert c.security_context.capabilities.add == added
    assert c.security_context.allow_privilege_escalation is False
    assert c.security_context.read_only_root_filesystem is True
    mounts = {m.name: m.mount_path for m in c.volume_mounts}
    assert mounts == {"tmp": "/tmp", "writable-0": "/root/.cache"}
    assert {v.name for v in pod.volumes if v.empty_dir is not None} == set(mounts)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (K8sOptions("x", name="Bad_Name"), "not a Kubernetes name"),
        (K8sOptions("x", name="a" * 64), "not a Kubernetes name"),
        (K8sOptions("x", replicas=0), "at least 1"),
        (K8sOptions("x", drain_s=-1), ">= 0"),
        (K8sOptions("x", start_timeout_s=1), ">= 2"),
        (K8sOptions("x", writable=("cache",)), "absolute path"),
        (K8sOptions("x", writable=("/tmp/",)), "other than / and /tmp"),
    ],
)
def test_refuses_what_kubernetes_would(options: K8sOptions, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        manifest(options)


def test_name_comes_from_the_image() -> None:
    assert K8sOptions("ghcr.io/org/Openenv_Echo:1.2@sha256:ab").resolved_name() == "openenv-echo"


def test_yaml_has_one_document_per_object_and_no_anchors() -> None:
    docs = manifest(K8sOptions("openenv-echo"))
    text = to_yaml(docs)
    assert "&id" not in text
    assert "*id" not in text
    assert list(yaml.safe_load_all(text)) == json.loads(json.dumps(docs))


def test_cli_writes_to_stdout_and_to_a_file(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "openenv", "k8s", "openenv-echo", "--replicas", "2", "--statefulset"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    kinds = [d["kind"] for d in yaml.safe_load_all(out)]
    assert kinds == ["Service", "StatefulSet"]
    target = tmp_path / "echo.yaml"
    subprocess.run([*cmd, "-o", str(target)], capture_output=True, timeout=60, check=True)
    assert target.read_text() == out
    bad = subprocess.run([*cmd[:4], "x", "--replicas", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "at least 1" in bad.stderr
