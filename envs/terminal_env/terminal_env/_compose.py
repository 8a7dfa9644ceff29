"""A task's ``environment/docker-compose.yaml``: services that run beside its container.

Harbor builds a task's ``main`` service from ``environment/Dockerfile`` and merges the
task's compose file over it; the other services are what the agent talks to (a
database, an API). This env reads the part of that file such tasks use::

    services:
      main:                      # the agent's container (built from the Dockerfile)
        depends_on: [api]        # optional; environment: {NAME: value} too
      api:                       # a service beside it, reachable as http://api:...
        build: ./api             # or {context: ./api}: a folder with a Dockerfile
        image: name:tag          # or a prebuilt image (its name mapped like FROM)
        command: [...]           # environment, working_dir, depends_on too
        healthcheck: {test: [...], interval: 1s, retries: 5}   # waited for (_compose_health.py)

Every other key (ports, volumes, networks, privileged, ...) is refused by name: the
session's containers get nothing from the host. Each session has a network of its own,
``internal`` and with no host address on it (_services.py), on which every service is
known by its name; ``main``
joins it too, and the task bridge ``openenv-tasks`` as well only when the task allows the
network (openenv/containers/_network.py: ``task_network_id``, ICC off, its connections to
the host dropped by ``guard_host``'s firewall rule where it could be installed).
Side services start in ``depends_on`` order before ``main`` and are removed with it; one
with a ``healthcheck`` is waited for until it is healthy before the next one starts.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._compose_health import Healthcheck, read_healthcheck
from ._harbor import TaskFormatError

COMPOSE_FILE = "docker-compose.yaml"
MAIN = "main"
_SIDE_KEYS = {"build", "image", "command", "environment", "working_dir", "depends_on", "healthcheck"}
_MAIN_KEYS = {"build", "environment", "depends_on"}


@dataclass(frozen=True, slots=True)
class Service:
    """One service beside ``main``."""

    name: str
    build_dir: str | None = None  # relative to environment/, holding a Dockerfile
    image: str | None = None
    command: tuple[str, ...] | str | None = None
    environment: tuple[tuple[str, str], ...] = ()
    working_dir: str | None = None
    healthcheck: Healthcheck | None = None  # waited for until healthy before what follows


@dataclass(frozen=True, slots=True)
class ComposeSpec:
    """The services of a task's compose file, in start order, and ``main``'s extra env."""

    services: tuple[Service, ...] = ()
    main_env: tuple[tuple[str, str], ...] = field(default_factory=tuple)


def _env(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if isinstance(value, list):
        pairs = []
        for item in value:
            if not isinstance(item, str) or "=" not in item:
                raise TaskFormatError(f"{where}: environment item {item!r} is not NAME=value")
            key, _, val = item.partition("=")
            pairs.append((key, val))
        return tuple(pairs)
    if isinstance(value, dict):
        return tuple((str(k), "" if v is None else str(v)) for k, v in value.items())
    raise TaskFormatError(f"{where}: environment must be a list or a table")


def _depends(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, dict):
        return [str(k) for k in value]
    raise TaskFormatError(f"{where}: depends_on must be a list of service names")


def _side(name: str, conf: dict[str, Any], env_dir: Path) -> Service:
    where = f"{COMPOSE_FILE}: services.{name}"
    build, image = conf.get("build"), conf.get("image")
    build_dir: str | None = None
    dockerfile = "Dockerfile"
    if isinstance(build, str):
        build_dir = build
    elif isinstance(build, dict):
        unknown = set(build) - {"context", "dockerfile"}
        if unknown:
            raise TaskFormatError(f"{where}.build: {', '.join(sorted(unknown))} not supported here")
        build_dir, dockerfile = str(build.get("context", ".")), str(build.get("dockerfile", "Dockerfile"))
        if dockerfile != "Dockerfile":
            raise TaskFormatError(f"{where}.build.dockerfile: only 'Dockerfile' is built here")
    elif build is not None:
        raise TaskFormatError(f"{where}.build: expected a folder or {{context, dockerfile}}")
    if build_dir is not None:
        folder = (env_dir / build_dir).resolve()
        if not folder.is_relative_to(env_dir.resolve()) or not (folder / dockerfile).is_file():
            raise TaskFormatError(f"{where}.build: no {dockerfile} in {build_dir!r} under environment/")
    elif not isinstance(image, str):
        raise TaskFormatError(f"{where}: needs a build folder or an image")
    command = conf.get("command")
    if command is not None and not (
        isinstance(command, str) or (isinstance(command, list) and all(isinstance(c, str) for c in command))
    ):
        raise TaskFormatError(f"{where}.command: expected a string or a list of strings")
    workdir = conf.get("working_dir")
    if workdir is not None and not (isinstance(workdir, str) and workdir.startswith("/")):
        raise TaskFormatError(f"{where}.working_dir: expected an absolute path")
    return Service(
        name=name,
        build_dir=build_dir,
        image=None if build_dir is not None else image,
        command=tuple(command) if isinstance(command, list) else command,
        environment=_env(conf.get("environment"), where),
        working_dir=workdir,
        healthcheck=None if "healthcheck" not in conf else read_healthcheck(conf["healthcheck"], where),
    )


def read_compose(env_dir: Path) -> ComposeSpec | None:
    """The task's compose file read (None when it has none); ``TaskFormatError`` names
    a key this env does not run, a missing build folder or a dependency cycle."""
    path = env_dir / COMPOSE_FILE
    if not path.is_file():
        return None
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:  # pragma: no cover - PyYAML comes with the env's extras
        raise TaskFormatError(f"{COMPOSE_FILE}: reading it needs PyYAML (pip install pyyaml)") from None
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise TaskFormatError(f"{COMPOSE_FILE}: {' '.join(str(exc).split())}") from None
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or not all(isinstance(v, dict | None) for v in services.values()):
        raise TaskFormatError(f"{COMPOSE_FILE}: expected a 'services' table of tables")
    unknown_top = set(doc) - {"services", "version", "name"}
    if unknown_top:
        raise TaskFormatError(
            f"{COMPOSE_FILE}: top-level {', '.join(sorted(unknown_top))} not supported here"
        )
    sides: dict[str, Service] = {}
    deps: dict[str, list[str]] = {}
    main_env: tuple[tuple[str, str], ...] = ()
    for name, conf in services.items():
        conf = conf or {}
        allowed = _MAIN_KEYS if name == MAIN else _SIDE_KEYS
        unknown = set(conf) - allowed
        if unknown:
            raise TaskFormatError(
                f"{COMPOSE_FILE}: services.{name}: {', '.join(sorted(unknown))} not supported here "
                f"(allowed: {', '.join(sorted(allowed))})"
            )
        deps[name] = _depends(conf.get("depends_on"), f"{COMPOSE_FILE}: services.{name}")
        if name == MAIN:
            main_env = _env(conf.get("environment"), f"{COMPOSE_FILE}: services.main")
        else:
            sides[name] = _side(str(name), conf, env_dir)
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            raise TaskFormatError(f"{COMPOSE_FILE}: depends_on has a cycle through {name!r}")
        if name not in deps:
            raise TaskFormatError(f"{COMPOSE_FILE}: depends_on names no service {name!r}")
        visiting.add(name)
        for dep in deps[name]:
            visit(dep)
        visiting.discard(name)
        order.append(name)

    for name in deps:
        visit(name)
    return ComposeSpec(services=tuple(sides[n] for n in order if n != MAIN), main_env=main_env)
