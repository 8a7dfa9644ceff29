"""Compose tasks (``environment/docker-compose.yaml``): the services beside a session's
container are its own, on a network that reaches nothing else, and are removed with it;
a compose file this env does not run is a clear error for that task alone.

Real Docker, the ``api-count`` test task (its oracle and wrong answer are checked with
the other nine in test_terminal_harbor_images.py). Skipped only where no Docker engine
answers (the reason says so).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _harbor_fixtures import compose_refusal, copy_task, docker_base, owned, sh, task_env, with_compose
from terminal_env import TerminalEnv

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

#: Prints, per address, how a TCP connect ended: "open", "refused" (a host answered),
#: or "unreachable" (nothing answered within a second).
PROBE = """python3 -c '
import json, socket, sys
out = {}
for addr in sys.argv[1:]:
    host, port = addr.rsplit(":", 1)
    s = socket.socket(); s.settimeout(1)
    try:
        s.connect((host, int(port))); out[addr] = "open"
    except ConnectionRefusedError:
        out[addr] = "refused"
    except OSError:
        out[addr] = "unreachable"
    s.close()
print(json.dumps(out))' """


def _session(env: TerminalEnv) -> tuple[str, str]:
    """The session's api service address and its network's gateway (the IPAM's: the
    host holds no address there)."""
    box = env._shell.sandbox  # the session's ContainerBox
    assert box.services is not None
    api = box.services.containers[0]
    api.reload()
    ip = api.attrs["NetworkSettings"]["Networks"][box.services.name]["IPAddress"]
    box.services.network.reload()
    gateway = box.services.network.attrs["IPAM"]["Config"][0]["Gateway"]
    return ip, gateway


async def test_a_sessions_services_are_its_own_and_reach_nothing_else(tmp_path: Path) -> None:
    base = docker_base()
    copy_task("api-count", tmp_path)
    async with task_env(tmp_path, base) as a, task_env(tmp_path, base) as b:
        await a.reset(options={"task_id": "api-count"})
        await b.reset(options={"task_id": "api-count"})
        _, gateway = _session(a)
        their_api, _ = _session(b)
        assert a._shell.sandbox.services.name != b._shell.sandbox.services.name
        fetch = "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://api:8000/items').status)\""
        for _ in range(50):  # the service may still be starting
            got = await sh(a, fetch, timeout_s=20)
            if got.output.strip().endswith("200"):
                break
        assert got.output.strip().endswith("200"), got.output
        targets = [f"{their_api}:8000", f"{gateway}:22", "172.17.0.1:22", "8.8.8.8:53"]
        probe = await sh(a, PROBE + " ".join(targets), timeout_s=30)
        result = json.loads(probe.output.strip().splitlines()[-1])
        # another session's service, the host (at the session network's gateway or
        # docker0), the outside: nothing answers, not even with a refusal
        assert result == dict.fromkeys(targets, "unreachable"), result
        owner = a.resources.images.owner
        assert len(owned(owner)) >= 6  # two sessions: a container, a service, a network each
    assert owned(owner) == []  # the services and the networks went with the sessions


@pytest.mark.parametrize(
    ("compose", "says"),
    [
        (
            "services:\n  api:\n    build: ./api\n    ports: ['8000:8000']\n",
            "services.api: ports not supported",
        ),
        ("services:\n  api:\n    build: ./nowhere\n", "no Dockerfile in './nowhere'"),
        ("services:\n  main:\n    depends_on: [db]\n", "depends_on names no service 'db'"),
        ("services: [\n", "docker-compose.yaml: "),
        ("volumes: {}\nservices: {}\n", "top-level volumes not supported"),
    ],
)
def test_a_compose_file_this_env_does_not_run_is_that_tasks_error(
    tmp_path: Path, compose: str, says: str
) -> None:
    why = compose_refusal(tmp_path, compose, "bad-compose")
    assert says in why, why


async def test_a_service_image_the_engine_lacks_fails_that_reset_only(tmp_path: Path) -> None:
    from openenv._exceptions import ExecutionError

    base = docker_base()
    copy_task("api-count", tmp_path)
    compose = "services:\n  main:\n    depends_on: [api]\n  api:\n    image: openenv-test/no-such-image:0\n"
    with_compose(tmp_path, "no-image", compose)
    async with task_env(tmp_path, base) as env:
        with pytest.raises(ExecutionError, match="'openenv-test/no-such-image:0' is not on this engine"):
            await env.reset(options={"task_id": "no-image"})
        await env.reset(options={"task_id": "api-count"})  # the other task still starts
