"""Fixtures for the container tests: a real Docker engine and the echo env image.

Skips happen in exactly one case: no Docker engine answers
(``openenv.containers._docker.docker_client()`` raises ``ProviderError``); the skip
reason is that error. Everything after that must work: a failed image build fails
the tests, it does not skip them.

The image is built once per session with ``build_env_image`` on the base named by
``OPENENV_BASE_IMAGE``, else the local offline ``openenv-local/python:3.11-bookworm``
if it exists, else ``python:3.11-slim`` (pulled; CI).

Cleanup, in three layers:

* tests register what they start with the ``track`` fixture; it is force-removed at
  teardown, pass or fail;
* the autouse ``no_leaks`` fixture also removes any *other* container that this test
  process came to own (``openenv.owner`` = host:our pid) during a test, and fails
  that test's teardown for it: a provider or client leaked it;
* the session check (``no_managed_container_survives`` at session teardown, and
  ``pytest_sessionfinish`` once more after every fixture is gone) fails loudly if any
  ``openenv.managed=1`` container created during the session survives, other than
  those owned by another live process (someone else's client, not ours).

Every wait is bounded; every server binds 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv._exceptions import ProviderError
from openenv.containers._docker_admin import pid_alive

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ECHO_ENV_DIR = REPO / "envs" / "echo_env"
LOCAL_BASE_IMAGE = "openenv-local/python:3.11-bookworm"
PUBLIC_BASE_IMAGE = "python:3.11-slim"
#: Per-test limit. The first test also pays for the session's image build (about
#: 40 s the first time on overlay2, longer on vfs or with a pull in CI).
TEST_TIMEOUT_S = 300
MANAGED = "openenv.managed"
OWNER = "openenv.owner"

_engine_error: str | None = None
_engine: Any = None
#: IDs of the managed containers that existed when the session check started.
_preexisting: set[str] | None = None
#: Every container a test of this run registered with ``track`` (detached ones included).
_tracked: set[str] = set()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            Path(str(item.path)).resolve().relative_to(HERE)
        except ValueError:
            continue
        item.add_marker(pytest.mark.docker)
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_S))


# --- the engine and the image ---------------------------------------------------------


def engine_or_none() -> Any:
    """The docker client, or None (and the reason in ``_engine_error``)."""
    global _engine, _engine_error
    if _engine is None and _engine_error is None:
        from openenv.containers._docker import docker_client

        try:
            _engine = docker_client()
        except ProviderError as exc:
            _engine_error = f"container tests need a Docker engine: {exc}"
    return _engine


@pytest.fixture(scope="session")
def docker() -> Any:
    """A connected ``docker.DockerClient``; skips the test when no engine answers."""
    client = engine_or_none()
    if client is None:
        pytest.skip(_engine_error or "no Docker engine")
    return client


def base_image(client: Any) -> str:
    import docker.errors

    chosen = os.environ.get("OPENENV_BASE_IMAGE")
    if chosen:
        return chosen
    try:
        client.images.get(LOCAL_BASE_IMAGE)
        return LOCAL_BASE_IMAGE
    except docker.errors.ImageNotFound:
        return PUBLIC_BASE_IMAGE


@pytest.fixture(scope="session")
def echo_image(docker: Any) -> str:
    """The echo env image (tag ``openenv-echo``), built once per session."""
    from openenv.containers import build_env_image

    lines: list[str] = []
    base = base_image(docker)
    try:
        tag = build_env_image(ECHO_ENV_DIR, base_image=base, client=docker, progress=lines.append)
    except ProviderError as exc:
        pytest.fail(f"building the echo image on {base} failed: {exc}\n" + "\n".join(lines[-30:]))
    assert tag == "openenv-echo"
    return tag


# --- helpers ------------------------------------------------------------------------


#: Where test runs on one host take turns at a real ``gc`` (see ``gc_turn``).
GC_TURN_LOCK = Path(tempfile.gettempdir()) / "openenv-tests-gc.lock"


@contextlib.contextmanager
def gc_turn(timeout_s: float = 90.0) -> Iterator[None]:
    """Hold this host's turn at a real ``gc``: it removes every dead owner's containers on
    the engine, another test run's orphans included, so a test that makes an orphan and
    checks that *its* gc removed it holds the turn from making it to its last look, and a
    test that only calls gc takes the turn for the call. Bounded: a turn not had within
    ``timeout_s`` fails the test."""
    with open(GC_TURN_LOCK, "a") as lock:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail(f"another test run held {GC_TURN_LOCK} for over {timeout_s:g} s")
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def owner_label() -> str:
    from openenv.containers._docker import _owner

    return str(_owner())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def managed(client: Any, **extra_labels: str) -> list[Any]:
    """Every ``openenv.managed=1`` container (running or not) with these labels too."""
    labels = [f"{MANAGED}=1", *(f"{k}={v}" for k, v in extra_labels.items())]
    # ignore_removed: one auto-removed between the listing and its inspection is skipped.
    return list(client.containers.list(all=True, filters={"label": labels}, ignore_removed=True))


def gone(client: Any, container_id: str) -> bool:
    import docker.errors

    try:
        client.containers.get(container_id)
    except docker.errors.NotFound:
        return True
    return False


def wait_gone(client: Any, container_id: str, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not gone(client, container_id):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def container_for_url(client: Any, base_url: str) -> Any:
    """The managed container that publishes ``base_url``'s port on 127.0.0.1."""
    port = base_url.rstrip("/").rsplit(":", 1)[1]
    for container in managed(client):
        for bindings in (container.attrs.get("NetworkSettings", {}).get("Ports") or {}).values():
            for b in bindings or []:
                if b.get("HostPort") == port and b.get("HostIp") == "127.0.0.1":
                    return container
    raise AssertionError(f"no openenv-managed container publishes {base_url}")


def force_remove(client: Any, container_id: str) -> None:
    import docker.errors

    with contextlib.suppress(docker.errors.NotFound):
        client.containers.get(container_id).remove(force=True)


def _foreign_live_owner(container: Any) -> bool:
    """Owned by another process on this host that is still running (not ours to judge)."""
    host, _, pid = container.labels.get(OWNER, "").rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and int(pid) != os.getpid() and pid_alive(int(pid))


def _another_runs(container: Any) -> bool:
    """Not this run's: owned by another live process, or started detached (``openenv run
    -d``) by a test this run did not track (another test run on the same engine)."""
    if container.id in _tracked or container.name in _tracked:
        return False
    return container.labels.get(OWNER) == "detached" or _foreign_live_owner(container)


def survivors(client: Any) -> list[Any]:
    """Managed containers created during this session that are still there."""
    if _preexisting is None:
        return []
    return [c for c in managed(client) if c.id not in _preexisting and not _another_runs(c)]


def _describe(containers: list[Any]) -> str:
    return ", ".join(
        f"{c.name} ({c.short_id}, {c.status}, owner {c.labels.get(OWNER)!r})" for c in containers
    )


# --- cleanup fixtures -------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def no_managed_container_survives() -> Iterator[None]:
    """At session end: fail if any managed container made during the session is left."""
    global _preexisting
    client = engine_or_none()
    if client is None:
        yield
        return
    _preexisting = {c.id for c in managed(client)}
    yield
    left = [c for c in survivors(client) if not wait_gone(client, c.id, timeout_s=10)]
    for c in left:
        force_remove(client, c.id)
    if left:
        pytest.fail(f"openenv-managed containers survived the test session (now removed): {_describe(left)}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Last check, after every fixture is torn down."""
    client = _engine
    if client is None or _preexisting is None:
        return
    left = survivors(client)
    if not left:
        return
    for c in left:
        force_remove(client, c.id)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = f"openenv-managed containers survived the test session (now removed): {_describe(left)}"
    if reporter is not None:
        reporter.write_line(f"ERROR: {message}", red=True, bold=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def track(docker: Any) -> Iterator[Callable[[Any], Any]]:
    """``track(container_or_id)``: force-removed at teardown, whatever happened."""
    ids: list[str] = []

    def add(container: Any) -> Any:
        ids.append(container if isinstance(container, str) else container.id)
        _tracked.add(ids[-1])
        return container

    yield add
    for container_id in ids:
        force_remove(docker, container_id)


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test whose code left a container owned by this process running."""
    client = engine_or_none()
    if client is None:
        yield
        return
    before = {c.id for c in managed(client, **{OWNER: owner_label()})}
    yield
    # Autouse fixtures are set up before the test's own ones, so `track` has removed
    # what the test registered by now; module fixtures' containers are in `before`.
    leaked = [c for c in managed(client, **{OWNER: owner_label()}) if c.id not in before]
    # A stopped container's auto-removal finishes in the engine shortly after stop().
    leaked = [c for c in leaked if not wait_gone(client, c.id, timeout_s=10)]
    for c in leaked:
        force_remove(client, c.id)
    if leaked:
        pytest.fail(f"the test left containers owned by this process (now removed): {_describe(leaked)}")
