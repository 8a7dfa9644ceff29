"""The env of a run: named as the other commands name one, reached at a base URL.

* a URL (``http://127.0.0.1:8000``): used as it is;
* an env folder, ``module:Class`` or an installed env's name (what ``openenv serve``
  takes, resolved by ``openenv.server``): served in this process on a free loopback
  port for the run (it dies with the run: nothing is left behind by a kill);
* a Docker image (``openenv-echo``): run with ``DockerProvider`` for the run;
* a Hub id (``org/name``, not a local folder): the live Space (``openenv.hub``).

Then ``/metadata``, ``/schema`` and the Task API tell the env's name, version,
actions and tasks.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import EnvNotFound, EvalError


@dataclass
class EnvHandle:
    """A reachable env server and what it says of itself."""

    target: str
    base_url: str
    name: str = ""
    version: str = ""
    schema: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def get(self, path: str, timeout_s: float = 30.0) -> Any:
        return _http(self.base_url + path, None, self.headers, timeout_s)

    def post(self, path: str, body: Mapping[str, Any], timeout_s: float = 60.0) -> Any:
        return _http(self.base_url + path, dict(body), self.headers, timeout_s)


def _http(url: str, body: dict[str, Any] | None, headers: Mapping[str, str], timeout_s: float) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json", **headers})
    with urllib.request.urlopen(request, timeout=timeout_s) as reply:
        return json.loads(reply.read() or b"null")


def _http_base(url: str) -> str:
    url = url.rstrip("/")
    if url.startswith("ws"):
        url = "http" + url[2:]
    return url.removesuffix("/ws")


@contextlib.contextmanager
def _serve_here(target: str, env_kwargs: Mapping[str, Any] | None, max_sessions: int) -> Iterator[str]:
    from ..server import ServerSettings, create_app, serve_in_background
    from ..server._serve import load_env_class, resolve_target

    env_class = load_env_class(*resolve_target(target))
    settings = ServerSettings.from_env(max_sessions=max(max_sessions, 1), env_kwargs=dict(env_kwargs or {}))
    with serve_in_background(create_app(env_class, settings=settings), start_timeout_s=120.0) as server:
        yield server.url


@contextlib.contextmanager
def _run_image(image: str) -> Iterator[str]:
    from ..containers import DockerProvider

    replica = DockerProvider(image).start()
    try:
        yield replica.base_url
    finally:
        replica.stop()


def _is_local_env(target: str) -> bool:
    from ..server._serve import resolve_target

    try:
        resolve_target(target)
    except EnvNotFound:
        return False
    return True


def _local_image(name: str) -> bool:
    try:
        import docker

        with contextlib.closing(docker.from_env(timeout=5)) as client:
            client.images.get(name)
    except Exception:
        return False
    return True


@contextlib.contextmanager
def open_env(
    target: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    max_sessions: int = 64,
    headers: Mapping[str, str] | None = None,
) -> Iterator[EnvHandle]:
    """The env ``target`` names, up for the block; ``EvalError`` when it names none or
    its server does not answer."""
    extra = dict(headers or {})
    with contextlib.ExitStack() as stack:
        url = _start(target, env_kwargs, max_sessions, extra, stack.enter_context)
        handle = EnvHandle(target, _http_base(url), headers=extra)
        try:
            meta = handle.get("/metadata", timeout_s=10.0)
            handle.schema = handle.get("/schema", timeout_s=10.0)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise EvalError(f"no env server answers at {handle.base_url}: {_reason(exc)}") from None
        handle.name = str(meta.get("name") or target)
        handle.version = str(meta.get("version") or "")
        yield handle


def _start(
    target: str,
    env_kwargs: Mapping[str, Any] | None,
    max_sessions: int,
    headers: dict[str, str],
    enter: Callable[[Any], str],
) -> str:
    if target.startswith(("http://", "https://", "ws://", "wss://")):
        return target
    if _is_local_env(target):
        return enter(_serve_here(target, env_kwargs, max_sessions))
    from pathlib import Path

    if target.count("/") == 1 and not target.startswith((".", "/")) and not Path(target).parent.is_dir():
        from ..hub._from_hub import resolve_hub_target

        try:
            hub = resolve_hub_target(target)
        except Exception as exc:
            raise EvalError(f"{target!r} names no env here, and the Hub says: {exc}") from None
        headers.update(hub.headers)
        if hub.url is None:
            raise EvalError(f"the Space {target} has no URL")
        return hub.url
    if _local_image(target):
        return enter(_run_image(target))
    raise EvalError(
        f"unknown env {target!r}: not a URL, an env folder, module:Class, an installed env, "
        "a Docker image here, or a Hub id (org/name)"
    )


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    return f"{type(reason).__name__}: {reason}" if not isinstance(reason, str) else reason
