"""``gc`` decisions and ``DockerProvider`` options, with a fake docker client (no engine).

``FakeDockerClient`` is a test double: it records calls and holds fake containers;
it talks to no engine. The real-engine tests are in ``tests/docker``.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from typing import Any

import docker.errors
import pytest

from openenv._exceptions import ProviderError
from openenv.containers import DockerProvider, _docker, containers, gc
from openenv.containers._docker import LABEL_IMAGE, LABEL_MANAGED, LABEL_OWNER, docker_client, using_client
from openenv.containers._network import ICC_OPTION, ISOLATED_NETWORK, network_id


class FakeContainer:
    """Test double of ``docker.models.containers.Container``."""

    def __init__(self, name: str, labels: dict[str, str], remove_error: Exception | None = None) -> None:
        self.name = name
        self.labels = labels
        self.removed = False
        self.remove_error = remove_error

    def remove(self, force: bool = False) -> None:
        assert force, "gc must force-remove (running containers)"
        if self.remove_error is not None:
            raise self.remove_error
        self.removed = True


class FakeContainers:
    """Test double of ``DockerClient.containers``: ``list`` and a ``create`` that records."""

    def __init__(self, containers: list[FakeContainer], create_error: Exception | None = None) -> None:
        self.containers = containers
        self.list_calls: list[dict[str, Any]] = []
        self.create_calls: list[tuple[str, dict[str, Any]]] = []
        self.create_error = create_error or docker.errors.APIError("refused by the test double")

    def list(
        self, all: bool = False, filters: dict[str, Any] | None = None, ignore_removed: bool = False
    ) -> list[FakeContainer]:
        self.list_calls.append({"all": all, "filters": filters, "ignore_removed": ignore_removed})
        wanted = (filters or {}).get("label")
        return [
            c
            for c in self.containers
            if wanted is None or (wanted == f"{LABEL_MANAGED}=1" and c.labels.get(LABEL_MANAGED) == "1")
        ]

    def create(self, image: str, **options: Any) -> Any:
        self.create_calls.append((image, options))
        raise self.create_error


class FakeImages:
    def __init__(self, pull_error: Exception | None = None) -> None:
        self.pulls: list[str] = []
        self.pull_error = pull_error

    def pull(self, image: str, **kwargs: Any) -> None:
        self.pulls.append(image)
        if self.pull_error is not None:
            raise self.pull_error


class FakeNetwork:
    def __init__(self, name: str, options: dict[str, str], created: str = "2026-01-01") -> None:
        self.name = name
        self.id = f"id-{name}-{created}"
        self.attrs = {"Options": options, "Created": created}


class FakeNetworks:
    """Test double of ``DockerClient.networks``: ``list`` by name (a substring, as the
    engine matches) and a ``create`` that records (or answers 409 as a racing twin)."""

    def __init__(self, networks: list[FakeNetwork], conflict: FakeNetwork | None = None) -> None:
        self.networks = networks
        self.conflict = conflict
        self.create_calls: list[tuple[str, dict[str, Any]]] = []

    def list(self, names: list[str] | None = None) -> list[FakeNetwork]:
        return [n for n in self.networks if names is None or any(x in n.name for x in names)]

    def create(self, name: str, **options: Any) -> FakeNetwork:
        self.create_calls.append((name, options))
        if self.conflict is not None:
            self.networks.append(self.conflict)
            raise docker.errors.APIError("409 Conflict", response=_Response(409))
        net = FakeNetwork(name, dict(options.get("options") or {}))
        self.networks.append(net)
        return net


class _Response:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.reason = "Conflict"


class FakeDockerClient:
    """Test double of ``docker.DockerClient``; no engine behind it."""

    def __init__(
        self,
        containers: list[FakeContainer] | None = None,
        networks: FakeNetworks | None = None,
        **errors: Any,
    ) -> None:
        self.containers = FakeContainers(containers or [], errors.get("create_error"))
        self.images = FakeImages(errors.get("pull_error"))
        self.networks = networks or FakeNetworks([])
        self.closed = False

    def close(self) -> None:
        self.closed = True


HOST = socket.gethostname()


def finished_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


def labelled(name: str, owner: str | None) -> FakeContainer:
    labels = {LABEL_MANAGED: "1", LABEL_IMAGE: "openenv-echo"}
    if owner is not None:
        labels[LABEL_OWNER] = owner
    return FakeContainer(name, labels)


@pytest.fixture
def fleet() -> dict[str, FakeContainer]:
    dead = finished_pid()
    return {
        "dead": labelled("dead", f"{HOST}:{dead}"),
        "live": labelled("live", f"{HOST}:{os.getpid()}"),
        "parent": labelled("parent", f"{HOST}:{os.getppid()}"),
        "elsewhere": labelled("elsewhere", "another-host:1"),
        "detached": labelled("detached", "detached"),
        "garbled": labelled("garbled", f"{HOST}:not-a-pid"),
        "unowned": labelled("unowned", None),
    }


def test_gc_removes_only_orphans_of_dead_local_owners(fleet: dict[str, FakeContainer]) -> None:
    client = FakeDockerClient(list(fleet.values()))
    removed = gc(client=client)
    # Dead owner on this host, and labels that name this host but no process: orphans.
    assert sorted(removed) == ["dead", "garbled"]
    assert {n for n, c in fleet.items() if c.removed} == {"dead", "garbled"}
    # It looked only at managed containers, stopped ones included.
    # ...and tolerated one that vanished while it was listing (a replica's auto-removal).
    assert client.containers.list_calls == [
        {"all": True, "filters": {"label": f"{LABEL_MANAGED}=1"}, "ignore_removed": True}
    ]


def test_gc_all_owners_removes_every_managed_container(fleet: dict[str, FakeContainer]) -> None:
    removed = gc(all_owners=True, client=FakeDockerClient(list(fleet.values())))
    assert sorted(removed) == sorted(fleet)
    assert all(c.removed for c in fleet.values())


def test_gc_skips_a_container_it_cannot_remove() -> None:
    stuck = FakeContainer(
        "stuck",
        {LABEL_MANAGED: "1", LABEL_OWNER: f"{HOST}:{finished_pid()}"},
        remove_error=docker.errors.APIError("removal already in progress"),
    )
    orphan = labelled("orphan", f"{HOST}:{finished_pid()}")
    assert gc(client=FakeDockerClient([stuck, orphan])) == ["orphan"]


def test_gc_without_an_engine_is_a_provider_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    with pytest.raises(ProviderError, match="no Docker engine answers"):
        docker_client()
    with pytest.raises(ProviderError, match="no Docker engine answers"):
        gc()


def test_provider_options_reach_the_engine() -> None:
    """Labels, loopback-only port, limits and env, as handed to ``containers.create``."""
    client = FakeDockerClient()
    provider = DockerProvider(
        "openenv-echo",
        env={"OPENENV_MAX_SESSIONS": "8"},
        cpus=1.5,
        memory="512m",
        labels={"team": "rl"},
        client=client,
    )
    with pytest.raises(ProviderError, match="docker could not start 'openenv-echo'"):
        provider.start()
    ((image, options),) = client.containers.create_calls
    assert image == "openenv-echo"
    assert options["auto_remove"] is True
    assert options["ports"] == {"8000/tcp": ("127.0.0.1", None)}
    assert options["nano_cpus"] == 1_500_000_000
    assert options["mem_limit"] == "512m"
    assert options["environment"] == {
        "OPENENV_HOST": "0.0.0.0",
        "OPENENV_PORT": "8000",
        "OPENENV_ALLOWED_HOSTS": "localhost",  # a rebound name gets 403 (tests/docker/test_guard.py)
        "OPENENV_MAX_SESSIONS": "8",
    }
    assert options["init"] is True  # orphans reaped whatever the image's entrypoint
    assert options["labels"] == {
        LABEL_MANAGED: "1",
        LABEL_OWNER: f"{HOST}:{os.getpid()}",
        LABEL_IMAGE: "openenv-echo",
        "team": "rl",
    }
    # as the README shows it (`openenv stop openenv-echo-1a2b3c4d`), no doubled prefix
    assert re.fullmatch(r"openenv-echo-[0-9a-f]{8}", options["name"])
    # On the project's own network, made (with containers unable to reach each other)
    # because the engine had none.
    ((net_name, net_options),) = client.networks.create_calls
    assert net_name == ISOLATED_NETWORK
    assert net_options["options"] == {ICC_OPTION: "false"}
    assert options["network"] == client.networks.networks[0].id


def test_provider_reuses_the_isolated_network_and_takes_a_named_one() -> None:
    isolated = FakeNetwork(ISOLATED_NETWORK, {ICC_OPTION: "false"})
    mine = FakeNetwork("mine", {})
    # A name that only contains the one asked for is not it (the engine's filter is a substring).
    longer = FakeNetwork(ISOLATED_NETWORK + "-2", {ICC_OPTION: "false"}, created="2025-01-01")
    client = FakeDockerClient(networks=FakeNetworks([longer, isolated, mine]))
    for network in (ISOLATED_NETWORK, "mine"):
        with pytest.raises(ProviderError, match="docker could not start"):
            DockerProvider("openenv-echo", client=client, network=network).start()
    assert [o["network"] for _, o in client.containers.create_calls] == [isolated.id, mine.id]
    assert client.networks.create_calls == []


def test_provider_refuses_a_missing_named_network_and_an_isolated_one_with_icc_on() -> None:
    client = FakeDockerClient()
    with pytest.raises(ProviderError, match="no Docker network 'nope': create it"):
        DockerProvider("openenv-echo", client=client, network="nope").start()
    handmade = FakeNetworks([FakeNetwork(ISOLATED_NETWORK, {})])
    client = FakeDockerClient(networks=handmade)
    with pytest.raises(ProviderError, match="lets containers reach each other"):
        DockerProvider("openenv-echo", client=client).start()
    assert client.containers.create_calls == []  # nothing started on it


def test_two_processes_making_the_network_at_once_use_one() -> None:
    # Another process made it between our look and our create (409): we use theirs.
    theirs = FakeNetwork(ISOLATED_NETWORK, {ICC_OPTION: "false"})
    client = FakeDockerClient(networks=FakeNetworks([], conflict=theirs))
    with pytest.raises(ProviderError, match="docker could not start"):
        DockerProvider("openenv-echo", client=client).start()
    ((_, options),) = client.containers.create_calls
    assert options["network"] == theirs.id
    # Twin networks of one name (an engine that allows them): every process picks the oldest.
    twins = [FakeNetwork(ISOLATED_NETWORK, {ICC_OPTION: "false"}, created=c) for c in ("2026-02", "2026-01")]
    assert network_id(FakeDockerClient(networks=FakeNetworks(twins))) == twins[1].id


def test_container_names_start_with_one_openenv_prefix() -> None:
    from openenv.containers._docker import container_stem

    assert container_stem("openenv-echo") == "openenv-echo"
    assert container_stem("registry.local/team/openenv-coding:1.2") == "openenv-coding"
    assert container_stem("maze") == "openenv-maze"


def test_provider_without_limits_sets_none() -> None:
    client = FakeDockerClient()
    with pytest.raises(ProviderError):
        DockerProvider("openenv-echo", client=client).start()
    ((_, options),) = client.containers.create_calls
    assert "nano_cpus" not in options
    assert "mem_limit" not in options


def test_provider_pulls_a_missing_image_then_reports_it() -> None:
    client = FakeDockerClient(
        create_error=docker.errors.ImageNotFound("no such image"),
        pull_error=docker.errors.ImageNotFound("not in any registry"),
    )
    with pytest.raises(
        ProviderError, match=r"image 'ghcr\.io/x/y:1' not found; build it with `openenv build`"
    ):
        DockerProvider("ghcr.io/x/y:1", client=client).start()
    assert client.images.pulls == ["ghcr.io/x/y:1"]


def test_base_tag_changes_with_openenvs_sources(tmp_path, monkeypatch):
    from openenv.containers import _build

    (tmp_path / "openenv").mkdir()
    (tmp_path / "docker").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname='openenv'\n")
    (tmp_path / "docker" / "base.Dockerfile").write_text("FROM x\n")
    source = tmp_path / "openenv" / "_a.py"
    source.write_text("A = 1\n")
    monkeypatch.setattr(_build, "source_root", lambda: tmp_path)
    first = _build.base_image_tag("python:3.11-slim")
    assert first == _build.base_image_tag("python:3.11-slim")  # stable
    assert first != _build.base_image_tag("other:base")
    source.write_text("A = 2\n")
    assert _build.base_image_tag("python:3.11-slim") != first  # a stale base is never reused


def test_a_client_made_for_one_call_is_closed_and_a_given_one_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    # An unclosed client leaves its engine socket to the garbage collector, whose
    # ResourceWarning then lands in whatever runs at that moment.
    made: list[FakeDockerClient] = []

    def fresh() -> FakeDockerClient:
        made.append(FakeDockerClient([] if made else [labelled("orphan", f"{HOST}:{finished_pid()}")]))
        return made[-1]

    monkeypatch.setattr(_docker, "docker_client", fresh)
    assert gc() == ["orphan"]
    assert [c.closed for c in made] == [True]
    assert containers() == []
    assert [c.closed for c in made] == [True, True]
    given = FakeDockerClient()
    with using_client(given) as client:
        assert client is given
    assert not given.closed
    with pytest.raises(RuntimeError), using_client() as client:
        raise RuntimeError("the call failed")
    assert made[-1].closed  # closed on the way out of a failure too
