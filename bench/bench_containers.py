"""Container and local-process start: from "start it" to the first successful reset.

    .venv/bin/python bench/bench_containers.py [--runs 5] [--image openenv-echo]

Docker (the image must be local; ``--build`` builds it first):

* phases, measured with the docker SDK directly, all from the same t0:
  ``docker run`` returned (create + start, detached, auto-remove, port on 127.0.0.1)
  -> first ``/health`` 200 (polled every ``--poll-ms``) -> first reset answered
  (``EnvClient`` connect + reset);
* the user path: ``EnvClient.from_docker_image(image)`` + ``reset()`` (DockerProvider:
  labels, log follower, /health backoff);
* close: ``close()`` until the container is gone from ``docker ps -a``.

Local process (``LocalProcessProvider``, no Docker): the same phases for
``python -m openenv serve <env dir>`` (spawned -> /health 200 -> reset), and
``EnvClient.from_env`` + ``reset()``.

Every run is bounded (``--timeout``); every container and process is removed or
stopped in ``finally``. Medians of ``--runs``; prints a markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from openenv import EnvClient  # noqa: E402
from openenv.containers._local import free_port  # noqa: E402

TARGET_S = 1.5


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def poll_health(url: str, t0: float, deadline: float, poll_s: float, alive: Callable[[], bool]) -> float:
    while not healthy(url):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url}/health not 200 in time")
        if not alive():
            raise RuntimeError(f"the server at {url} exited while starting")
        time.sleep(poll_s)
    return time.monotonic() - t0


def first_reset(url: str, t0: float, models: Any) -> float:
    with EnvClient(url, models, timeout_s=30) as env:
        env.reset()
        return time.monotonic() - t0


# --- docker -------------------------------------------------------------------------------


def docker_phases(client: Any, image: str, models: Any, poll_s: float, timeout_s: float) -> dict[str, float]:
    import docker.errors

    t0 = time.monotonic()
    container = client.containers.run(
        image,
        detach=True,
        auto_remove=True,
        labels={"openenv.managed": "1", "openenv.owner": f"{os.uname().nodename}:{os.getpid()}"},
        ports={"8000/tcp": ("127.0.0.1", None)},
    )
    try:
        run_s = time.monotonic() - t0
        container.reload()
        port = container.attrs["NetworkSettings"]["Ports"]["8000/tcp"][0]["HostPort"]
        url = f"http://127.0.0.1:{port}"

        def alive() -> bool:
            container.reload()
            return bool(container.status in ("created", "running"))

        health_s = poll_health(url, t0, t0 + timeout_s, poll_s, alive)
        reset_s = first_reset(url, t0, models)
    finally:
        with contextlib.suppress(docker.errors.APIError):
            container.remove(force=True)
    return {"run": run_s, "health": health_s, "reset": reset_s}


def gone(client: Any, container_id: str) -> bool:
    import docker.errors

    try:
        client.containers.get(container_id)
    except docker.errors.NotFound:
        return True
    return False


def docker_user_path(client: Any, image: str, models: Any, timeout_s: float) -> dict[str, float]:
    from openenv.containers import DockerProvider

    provider = DockerProvider(image, client=client, start_timeout_s=timeout_s)
    t0 = time.monotonic()
    replica = provider.start()
    try:
        env = EnvClient(replica.base_url, models, timeout_s=30)
        env.on_close(replica.stop)  # what from_docker_image does
        env.reset()
        total = time.monotonic() - t0
        t1 = time.monotonic()
        env.close()
        deadline = time.monotonic() + timeout_s
        while not gone(client, replica.id) and time.monotonic() < deadline:
            time.sleep(0.01)
        close_s = time.monotonic() - t1
    finally:
        replica.stop()
    return {"user": total, "close": close_s}


# --- local process -----------------------------------------------------------------------


def local_phases(env_dir: str, models: Any, poll_s: float, timeout_s: float) -> dict[str, float]:
    port = free_port()
    argv = [sys.executable, "-m", "openenv", "serve", env_dir, "--host", "127.0.0.1", "--port", str(port)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )
    try:
        spawn_s = time.monotonic() - t0
        url = f"http://127.0.0.1:{port}"
        health_s = poll_health(url, t0, t0 + timeout_s, poll_s, lambda: proc.poll() is None)
        reset_s = first_reset(url, t0, models)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return {"run": spawn_s, "health": health_s, "reset": reset_s}


def local_user_path(env_dir: str, models: Any, timeout_s: float) -> dict[str, float]:
    from openenv.containers import LocalProcessProvider

    t0 = time.monotonic()
    env = EnvClient.from_provider(
        LocalProcessProvider(env_dir, start_timeout_s=timeout_s), models, timeout_s=30
    )
    try:
        env.reset()
        total = time.monotonic() - t0
    finally:
        t1 = time.monotonic()
        env.close()  # stops the process (SIGTERM to its group, waited for)
        close_s = time.monotonic() - t1
    return {"user": total, "close": close_s}


# --- report -----------------------------------------------------------------------------------


def collect(runs: int, fn: Callable[[], dict[str, float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for _ in range(runs):
        for key, value in fn().items():
            out.setdefault(key, []).append(value)
    return out


def row(label: str, values: list[float]) -> str:
    med = statistics.median(values)
    return f"| {label} | {med:.3f} | {min(values):.3f} | {max(values):.3f} | {len(values)} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per measurement (median reported)")
    ap.add_argument("--image", default="openenv-echo")
    ap.add_argument("--env-dir", default=str(ROOT / "envs" / "echo_env"))
    ap.add_argument("--poll-ms", type=float, default=5.0, help="/health poll interval of the phase runs")
    ap.add_argument("--timeout", type=float, default=60.0, help="bound on each start, seconds")
    ap.add_argument("--build", action="store_true", help="build the image first (openenv build)")
    ap.add_argument("--base-image", default=os.environ.get("OPENENV_BASE_IMAGE"))
    ap.add_argument("--skip-docker", action="store_true")
    ap.add_argument("--skip-local", action="store_true")
    args = ap.parse_args(argv)
    if not 1 <= args.runs <= 50:
        ap.error("--runs must be between 1 and 50")

    from echo_env import MODELS

    poll_s = args.poll_ms / 1000
    rows: list[str] = []
    notes: list[str] = [f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start"]

    if not args.skip_docker:
        import docker.errors

        from openenv.containers._docker import docker_client

        client = docker_client()
        if args.build:
            from openenv.containers import build_env_image

            base = args.base_image or "openenv-local/python:3.11-bookworm"
            build_env_image(
                args.env_dir, tag=args.image, base_image=base, client=client, progress=lambda s: None
            )
        try:
            client.images.get(args.image)
        except docker.errors.ImageNotFound:
            ap.error(f"image {args.image!r} is not local; build it (openenv build) or pass --build")
        info = client.info()
        notes.append(f"docker {info.get('ServerVersion')}, storage driver {info.get('Driver')}")
        docker_phases(client, args.image, MODELS, poll_s, args.timeout)  # warm-up, not counted
        phases = collect(args.runs, lambda: docker_phases(client, args.image, MODELS, poll_s, args.timeout))
        user = collect(args.runs, lambda: docker_user_path(client, args.image, MODELS, args.timeout))
        rows += [
            row("docker: `docker run` returned (create + start)", phases["run"]),
            row("docker: first `/health` 200", phases["health"]),
            row("docker: first reset answered", phases["reset"]),
            row("docker: `from_docker_image` + reset (DockerProvider)", user["user"]),
            row("docker: `close()` until the container is gone", user["close"]),
        ]
        target = statistics.median(phases["reset"])
        notes.append(
            f"container start -> first reset: median {target:.3f} s, target <= {TARGET_S} s: "
            + ("met" if target <= TARGET_S else "MISSED")
        )

    if not args.skip_local:
        local_phases(args.env_dir, MODELS, poll_s, args.timeout)  # warm-up (page cache), not counted
        phases = collect(args.runs, lambda: local_phases(args.env_dir, MODELS, poll_s, args.timeout))
        user = collect(args.runs, lambda: local_user_path(args.env_dir, MODELS, args.timeout))
        rows += [
            row("local: process spawned", phases["run"]),
            row("local: first `/health` 200", phases["health"]),
            row("local: first reset answered", phases["reset"]),
            row("local: `from_env` + reset (LocalProcessProvider)", user["user"]),
            row("local: `close()` (process group stopped)", user["close"]),
        ]

    print("| measurement (seconds from start) | median | min | max | runs |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for line in rows:
        print(line)
    print()
    for note in notes:
        print(f"- {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
