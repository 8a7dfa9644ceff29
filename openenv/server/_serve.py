"""Run an env app under uvicorn, in one process or ``workers`` processes.

An env is named by a target, resolved once:

* ``package.module:Class`` - an import path;
* a folder holding a ``pyproject.toml`` with an ``[project.entry-points."openenv.envs"]``
  table (the folder is put on ``sys.path`` when the package is not installed);
* a name registered in the ``openenv.envs`` entry-point group by an installed package.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import socket
import sys
import tomllib
from pathlib import Path
from typing import Any

from .._env import AsyncEnvironment, EnvClass, Environment
from ._settings import ServerSettings

ENTRY_POINT_GROUP = "openenv.envs"


class EnvNotFound(LookupError):
    """The target names no environment."""


def resolve_target(target: str) -> tuple[str, str | None]:
    """Turn a target into ``("module:Class", folder-to-import-from or None)``."""
    folder = Path(target)
    if folder.is_dir():
        pyproject = folder / "pyproject.toml"
        if not pyproject.is_file():
            raise EnvNotFound(f"{target} is a folder without pyproject.toml")
        with pyproject.open("rb") as f:
            project = tomllib.load(f).get("project", {})
        entries = project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
        if not entries:
            table = f'[project.entry-points."{ENTRY_POINT_GROUP}"]'
            raise EnvNotFound(f"{pyproject} has no {table} table")
        spec = next(iter(entries.values()))
        return spec, str(folder.resolve())
    if ":" in target:
        return target, None
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == target:
            return ep.value, None
    known = sorted(ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    raise EnvNotFound(
        f"no environment {target!r}: give module:Class, an env folder, "
        f"or one of {known or 'no installed envs'}"
    )


def load_env_class(spec: str, path: str | None = None) -> EnvClass:
    """Import ``module:Class``; ``path`` is tried first when the module is not installed."""
    module_name, _, attr = spec.partition(":")
    if path and importlib.util.find_spec(module_name.split(".")[0]) is None:
        sys.path.insert(0, path)
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, Environment | AsyncEnvironment)):
        raise EnvNotFound(f"{spec} is not an Environment or AsyncEnvironment class")
    return obj


def uvicorn_options(settings: ServerSettings) -> dict[str, Any]:
    """The fastest uvicorn stack installed, compression off, sizes and pings set."""
    have = importlib.util.find_spec
    return {
        "host": settings.host,
        "port": settings.port,
        "loop": "uvloop" if have("uvloop") else "asyncio",
        "http": "httptools" if have("httptools") else "h11",
        "ws": "websockets-sansio",
        "ws_max_size": settings.max_frame_bytes,
        "ws_ping_interval": settings.ping_interval_s or None,
        "ws_ping_timeout": settings.ping_timeout_s or None,
        "ws_per_message_deflate": False,
        "access_log": False,
        "log_level": settings.log_level,
        "lifespan": "on",
        "timeout_graceful_shutdown": 5,
    }


def serve(target: str | EnvClass, settings: ServerSettings | None = None) -> None:
    """Serve an env until interrupted. ``settings.workers > 1`` starts worker processes."""
    import uvicorn

    settings = settings or ServerSettings.from_env()
    if isinstance(target, str):
        spec, path = resolve_target(target)
        env_class = load_env_class(spec, path)
    else:
        env_class, spec, path = target, f"{target.__module__}:{target.__qualname__}", None
    if settings.workers == 1:
        from ._app import create_app

        uvicorn.run(create_app(env_class, settings=settings), **uvicorn_options(settings))
        return
    _supervise(spec, path, settings)


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket with SO_REUSEPORT: each worker binds its own, and the kernel
    spreads new connections evenly over them (with one shared accept queue, whichever
    worker wakes first takes most of a burst)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _worker_main(spec: str, path: str | None, settings: ServerSettings) -> None:
    import uvicorn

    from ._app import create_app

    sock = _listen(settings.host, settings.port)
    app = create_app(load_env_class(spec, path), settings=settings)
    uvicorn.Server(uvicorn.Config(app, **uvicorn_options(settings))).run(sockets=[sock])


def _supervise(spec: str, path: str | None, settings: ServerSettings) -> None:
    """Run ``settings.workers`` worker processes; restart one that dies; stop all on
    SIGINT/SIGTERM."""
    import logging
    import multiprocessing
    import signal
    from multiprocessing.connection import wait

    log = logging.getLogger("openenv.server")
    _listen(settings.host, settings.port).close()  # fail here, clearly, if the port is taken
    ctx = multiprocessing.get_context("spawn")
    stopping = False

    def start() -> Any:
        proc = ctx.Process(target=_worker_main, args=(spec, path, settings), name="openenv-worker")
        proc.start()
        return proc

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    workers = [start() for _ in range(settings.workers)]
    print(f"openenv: {settings.workers} workers on http://{settings.host}:{settings.port}", flush=True)
    try:
        while not stopping:
            wait([w.sentinel for w in workers], timeout=0.5)
            for i, w in enumerate(workers):
                if not w.is_alive() and not stopping:
                    log.warning("worker %s exited with %s; starting a new one", w.pid, w.exitcode)
                    workers[i] = start()
    finally:
        for w in workers:
            w.terminate()  # SIGTERM: uvicorn shuts down gracefully
        for w in workers:
            w.join(timeout=10)
            if w.is_alive():
                w.kill()
                w.join(timeout=5)
