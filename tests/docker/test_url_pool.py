"""``openenv.k8s.UrlPool`` over echo containers run as ``openenv k8s`` makes their pods:
the manifest's security context (uid 1000, read-only root, /tmp the one writable
path, no capabilities, no privilege escalation) and memory limit, translated to
``docker run`` options. One container is killed mid-episode: only its sessions fail,
with ``ReplicaLost``; the others go on and new sessions go to the live one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from echo_env import MODELS, EchoAction

from openenv import EnvClient
from openenv._exceptions import ReplicaLost
from openenv.containers import wait_healthy
from openenv.k8s import PORT, K8sOptions, UrlPool, manifest

from .conftest import free_port


def pod_run_options(options: K8sOptions) -> dict[str, Any]:
    """``docker.containers.run`` options for what ``openenv k8s`` writes into the pod."""
    pod = manifest(options)[1]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    ctx, sec = pod["securityContext"], c["securityContext"]
    return {
        "user": f"{ctx['runAsUser']}:{ctx['runAsGroup']}",
        "read_only": sec["readOnlyRootFilesystem"],
        "tmpfs": {m["mountPath"]: "" for m in c["volumeMounts"]},  # the pod's emptyDirs
        "cap_drop": sec["capabilities"]["drop"],
        "cap_add": sec["capabilities"].get("add", []),
        "security_opt": [] if sec["allowPrivilegeEscalation"] else ["no-new-privileges"],
        "mem_limit": c["resources"]["limits"]["memory"].removesuffix("Gi") + "g",
        "environment": {e["name"]: e["value"] for e in c["env"]},
    }


def run_like_the_pod(docker: Any, image: str, track: Callable[[Any], Any]) -> tuple[Any, str]:
    """``image`` under the pod spec that ``openenv k8s`` writes for it; (container, URL)."""
    run = pod_run_options(K8sOptions(image))
    assert run["user"] == "1000:1000"
    assert run["read_only"] is True
    assert list(run["tmpfs"]) == ["/tmp"]
    assert run["cap_drop"] == ["ALL"]
    assert run["cap_add"] == []
    port = free_port()
    container = track(docker.containers.run(
        image, detach=True, ports={f"{PORT}/tcp": ("127.0.0.1", port)}, **run
    ))
    url = f"http://127.0.0.1:{port}"

    def running() -> bool:
        container.reload()
        return container.status in ("created", "running")

    def logs() -> str:
        return str(container.logs(tail=30).decode(errors="replace"))

    wait_healthy(url, timeout_s=60, alive=running, logs=logs, what=f"{image} (pod settings)")
    return container, url


def test_url_pool_over_pod_like_containers_survives_one_killed_mid_episode(
    docker: Any, echo_image: str, track: Callable[[Any], Any]
) -> None:
    (dead, dead_url), (live, live_url) = (run_like_the_pod(docker, echo_image, track) for _ in range(2))
    clients: list[EnvClient[Any, Any, Any]] = []
    with UrlPool([dead_url, live_url]) as pool:
        try:
            for _ in range(4):
                env = pool.client(MODELS, timeout_s=10)
                env.reset()
                clients.append(env)
            assert pool.load() == {dead_url: 2, live_url: 2}

            dead.kill()
            for env in clients:
                if env.base_url == dead_url:
                    with pytest.raises(ReplicaLost):
                        env.step(EchoAction(message="x"))
                else:
                    assert env.step(EchoAction(message="y")).observation.echoed_message == "y"

            for _ in range(2):
                fresh = pool.client(MODELS, timeout_s=10)
                clients.append(fresh)
                assert fresh.base_url == live_url
                fresh.reset()
                assert fresh.step(EchoAction(message="z")).observation.echoed_message == "z"
        finally:
            for env in clients:
                env.close()
    assert live.attrs["Config"]["User"] == "1000:1000"
