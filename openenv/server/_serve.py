"""Run an env app under uvicorn, in one process or ``workers`` processes.

An env is named by a target, resolved once:

* ``package.module:Class`` - an import path;
* an upstream OpenEnv env folder (``openenv.yaml`` and ``server/app.py``): the env its
  ``create_app`` wraps, served by our app;
* a folder holding a ``pyproject.toml`` with an ``[project.entry-points."openenv.envs"]``
  table (the folder is put on ``sys.path`` when the package is not installed);
* a name registered in the ``openenv.envs`` entry-point group by an installed package;
* ``gym:<id>`` - a registered Gymnasium env (``module:Class`` may also name a
  ``gymnasium.Env`` subclass); both are served through ``openenv.gym``;
* ``verifiers:<taskset>`` - a verifiers taskset, served through ``openenv.verifiers``.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.metadata
import importlib.util
import signal
import socket
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._env import AsyncEnvironment, EnvClass, Environment
from .._exceptions import EnvNotFound as EnvNotFound  # re-exported: its home before the one tree
from .._exceptions import ServeFailed as ServeFailed  # re-exported: its home before the one tree
from .._extras import require
from .._heap import bound_heap
from .._keepalive import SERVER_KEEP_ALIVE_S
from ._exit import EXIT_MARGIN_S, GRACE_S, ExitDeadline
from ._guard import raise_open_files_limit
from ._kwargs import check_env_kwargs
from ._priority import favour_loop_thread
from ._settings import ServerSettings

ENTRY_POINT_GROUP = "openenv.envs"


def check_port(host: str, port: int) -> None:
    """Raise ``ServeFailed`` when ``host:port`` cannot be bound."""
    try:
        _listen(host, port).close()
    except OSError as exc:
        raise ServeFailed(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def resolve_target(target: str) -> tuple[str, str | None]:
    """Turn a target into ``("module:Class", folder-to-import-from or None)``."""
    folder = Path(target)
    if folder.is_dir():
        pyproject = folder / "pyproject.toml"
        upstream = _upstream_app(folder)
        if not pyproject.is_file():
            if upstream is not None:
                return upstream
            raise EnvNotFound(f"{target} is a folder without pyproject.toml (nor an upstream openenv.yaml)")
        with pyproject.open("rb") as f:
            project = tomllib.load(f).get("project", {})
        entries = project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
        if not entries and upstream is not None:
            return upstream
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
    close = difflib.get_close_matches(target.replace("-", "_").removesuffix("_env"), known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    raise EnvNotFound(
        f"no environment {target!r}: {hint}give module:Class, an env folder, "
        f"or one of {known or 'no installed envs'}"
    )


def _upstream_app(folder: Path) -> tuple[str, str] | None:
    """An upstream OpenEnv env folder (``openenv.yaml`` and ``server/app.py``): its app
    module, imported as a package named after the folder, from the folder's parent."""
    if not ((folder / "openenv.yaml").is_file() and (folder / "server" / "app.py").is_file()):
        return None
    folder = folder.resolve()
    return f"{folder.name}.server.app:app", str(folder.parent)


def _not_importable(top: str) -> bool:
    """No such package, or only a namespace package: the env folder itself, found on the
    current directory when serving ``guess`` from the folder's parent (the real package
    is one level down, inside it)."""
    found = importlib.util.find_spec(top)
    return found is None or found.origin is None


def load_env_class(spec: str, path: str | None = None) -> EnvClass:
    """Import ``module:Class``; ``path`` is tried first when the module is not installed."""
    if spec.startswith("gym:"):
        return _gym_class(spec[4:])
    if spec.startswith("verifiers:"):  # a verifiers taskset: openenv.verifiers serves it
        from ..verifiers import env_class

        return env_class(spec[len("verifiers:"):])
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise EnvNotFound(f"{spec!r} is not module:Class")
    if path and _not_importable(module_name.split(".")[0]):
        sys.path.append(path)  # after the installed packages: a folder's uvicorn.py shadows nothing
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # The target's own module (or a parent package) is missing: a user's typo. A
        # module that the env itself imports and lacks is a real error: keep it.
        parts = module_name.split(".")
        if exc.name not in {".".join(parts[: i + 1]) for i in range(len(parts))}:
            raise
        raise EnvNotFound(f"no module named {exc.name!r} (from {spec!r})") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise EnvNotFound(f"module {module_name!r} has no attribute {attr!r} (from {spec!r})") from None
    served = getattr(getattr(obj, "state", None), "env_class", None)
    if not isinstance(obj, type) and isinstance(served, type):  # an app made by openenv.core's create_app
        obj = served
    gym = sys.modules.get("gymnasium")
    if gym is not None and isinstance(obj, type) and issubclass(obj, gym.Env):
        return _gym_class(obj)
    if not (isinstance(obj, type) and issubclass(obj, Environment | AsyncEnvironment)):
        raise EnvNotFound(f"{spec} is not an Environment or AsyncEnvironment class")
    return obj


def _gym_class(target: Any) -> EnvClass:
    """A Gymnasium env id or ``gymnasium.Env`` subclass, served by ``openenv.gym``."""
    gym = require("gymnasium", extra="gym", feature="serving a Gymnasium env")
    from ..gym import gym_env_class

    try:
        return gym_env_class(target)
    except gym.error.Error as exc:
        raise EnvNotFound(f"gym:{target}: {exc}") from None


def _ws_protocol(settings: ServerSettings) -> Any:
    """uvicorn's sans-I/O WebSocket protocol, with our direct channel where it fits."""
    try:
        from ._direct import protocol_class
    except ImportError:  # a uvicorn without the sans-I/O protocol module
        return "websockets-sansio"
    return protocol_class(settings.message_timeout_s) or "websockets-sansio"


def _http_protocol(settings: ServerSettings) -> Any:
    """uvicorn's HTTP protocol (httptools where installed, else h11) with header
    deadlines and a cap per client (``_guard.py``), one guard per server process."""
    from ._guard import ConnectionGuard, guarded_http

    base: type
    if importlib.util.find_spec("httptools"):
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        base = HttpToolsProtocol
    else:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        base = H11Protocol
    guard = ConnectionGuard(settings.max_connections_per_client, settings.header_timeout_s)
    return guarded_http(base, guard)


def uvicorn_options(settings: ServerSettings) -> dict[str, Any]:
    """The fastest uvicorn stack installed, compression off, sizes and pings set."""
    have = importlib.util.find_spec
    return {
        "host": settings.host,
        "port": settings.port,
        "loop": "uvloop" if have("uvloop") else "asyncio",
        "http": _http_protocol(settings),
        "ws": _ws_protocol(settings),
        "ws_max_size": settings.max_frame_bytes,
        "ws_ping_interval": settings.ping_interval_s or None,
        "ws_ping_timeout": settings.ping_timeout_s or None,
        "ws_per_message_deflate": False,
        "access_log": False,
        # X-Forwarded-For names the client (its session quota) only from proxies the
        # operator trusts; uvicorn's default trusts 127.0.0.1, so any local caller could
        "proxy_headers": bool(settings.forwarded_allow_ips),
        "forwarded_allow_ips": settings.forwarded_allow_ips or None,
        "log_level": settings.log_level,
        "lifespan": "on",
        "timeout_graceful_shutdown": GRACE_S,
        "timeout_keep_alive": SERVER_KEEP_ALIVE_S,
    }


def serve(
    target: str | EnvClass, settings: ServerSettings | None = None, *, exits_after: bool = False
) -> None:
    """Serve an env until interrupted. ``settings.workers > 1`` starts worker processes.

    Returns normally (exit status 0 for the CLI) after a clean SIGTERM/SIGINT shutdown.
    A stop signal also arms an exit deadline (``_exit.py``): the process ends at the
    latest ``EXIT_MARGIN_S`` after uvicorn's graceful period. ``exits_after``: the
    process ends when this returns (``openenv serve``), so the deadline also bounds the
    interpreter's exit; else it is called off on return.
    """
    uvicorn = require("uvicorn", extra="server", feature="openenv serve")

    settings = settings or ServerSettings.from_env()
    if isinstance(target, str):
        spec, path = resolve_target(target)
        env_class = load_env_class(spec, path)
    else:
        env_class, spec, path = target, f"{target.__module__}:{target.__qualname__}", None
    check_env_kwargs(env_class, settings.env_kwargs)  # a wrong argument stops here, not at each reset
    if settings.workers == 1:
        from ._app import create_app

        if settings.port:
            check_port(settings.host, settings.port)
        raise_open_files_limit()
        bound_heap()
        favour_loop_thread()  # this thread runs the event loop

        from .._uvicorn_server import PromptServer

        app = create_app(env_class, settings=settings)
        server = PromptServer(uvicorn.Config(app, **uvicorn_options(settings)))
        _announce_when_started(server, env_class.__name__)
        _run(server, exits_after=exits_after)
        return
    _supervise(spec, path, settings)


def _run(server: Any, *, exits_after: bool, sockets: list[socket.socket] | None = None) -> None:
    """``server.run()``, bounded after a stop signal by an ``ExitDeadline``."""
    deadline = ExitDeadline()
    deadline.on_signal(server)
    try:
        with _signals_end_cleanly():
            if sockets is None:
                server.run()
            else:
                server.run(sockets=sockets)
        deadline.shut_down = True
    finally:
        if not exits_after:
            deadline.disarm()


def serving_line(env_name: str, host: str, port: int) -> str:
    """The one line ``openenv serve`` prints once it accepts connections."""
    shown = f"[{host}]" if ":" in host else host
    return f"openenv: serving {env_name} on http://{shown}:{port} (Ctrl-C stops it)"


def _announce_when_started(server: Any, env_name: str) -> None:
    """Print the URL (with the port actually bound, also for ``--port 0``) once uvicorn's
    startup, the env's per-process resources included, has finished."""
    startup = server.startup

    async def startup_then_announce(sockets: Any = None) -> None:
        await startup(sockets=sockets)
        if server.started and server.servers and server.servers[0].sockets:
            host, port = server.servers[0].sockets[0].getsockname()[:2]
            print(serving_line(env_name, host, port), flush=True)

    server.startup = startup_then_announce


@contextlib.contextmanager
def _signals_end_cleanly() -> Iterator[None]:
    """uvicorn re-raises the SIGTERM/SIGINT that stopped it, once it has shut down, with
    the handlers it found installed: install no-op ones, so a clean stop ends with
    status 0 instead of -15 (or a KeyboardInterrupt traceback)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopped_by: list[int] = []
    handlers = {sig: signal.signal(sig, lambda signum, _: stopped_by.append(signum))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


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

    from .._uvicorn_server import PromptServer
    from ._app import create_app

    sock = _listen(settings.host, settings.port)
    raise_open_files_limit()
    bound_heap()
    favour_loop_thread()
    app = create_app(load_env_class(spec, path), settings=settings)
    _run(PromptServer(uvicorn.Config(app, **uvicorn_options(settings))), exits_after=True, sockets=[sock])


def _supervise(spec: str, path: str | None, settings: ServerSettings) -> None:
    """Run ``settings.workers`` worker processes; restart one that dies; stop all on
    SIGINT/SIGTERM."""
    import logging
    import multiprocessing
    import signal
    from multiprocessing.connection import wait

    log = logging.getLogger("openenv.server")
    check_port(settings.host, settings.port)  # fail here, clearly, not in every worker
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
        end = time.monotonic() + GRACE_S + EXIT_MARGIN_S + 1.0  # each ends itself by then
        for w in workers:
            w.join(timeout=max(0.0, end - time.monotonic()))
            if w.is_alive():
                w.kill()
                w.join(timeout=5)
