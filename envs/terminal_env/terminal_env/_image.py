"""A task's own image: its ``environment/`` folder built once, cached by content.

The tag is ``openenv-task-<id>:<hash>``, the hash over every file of the folder (path,
mode, bytes) and the ``FROM`` mapping in force, so an edited Dockerfile or a changed
file it copies builds again and an unchanged folder never does (the engine keeps it).

Offline, an image's ``FROM`` base can be mapped to a local image, as ``openenv build``
does with its base (``--base-image``): ``base_images`` (the env's argument, or
``OPENENV_TASK_BASE_IMAGES``) is a list ``FROM=LOCAL,FROM=LOCAL``; with
``OPENENV_BASE_IMAGE`` set, every ``FROM python:<tag>`` not listed maps to it. The
Dockerfile is rewritten in a copy of the build context; the task folder is not touched.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from openenv._exceptions import ExecutionError

_FROM = re.compile(r"^(\s*FROM\s+(?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE | re.MULTILINE)
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()
LOG_LINES = 20  # build log lines kept in a failure's message
LABEL = "openenv.task"


class ImageBuildFailed(ExecutionError):
    """A task's image could not be built; the message ends with the build's last lines."""


def parse_base_images(spec: str | None) -> dict[str, str]:
    """``"python:3.11-slim=openenv-local/python:3.11-bookworm,..."`` as a dict."""
    out: dict[str, str] = {}
    for item in (spec or "").split(","):
        if not item.strip():
            continue
        src, sep, dest = item.partition("=")
        if not sep or not src.strip() or not dest.strip():
            raise ValueError(f"base_images: {item!r} is not FROM=LOCAL")
        out[src.strip()] = dest.strip()
    return out


def base_map(base_images: str | dict[str, str] | None = None) -> dict[str, str]:
    """The ``FROM`` mapping: the argument, else ``OPENENV_TASK_BASE_IMAGES``."""
    if isinstance(base_images, dict):
        return dict(base_images)
    return parse_base_images(
        base_images if base_images is not None else os.environ.get("OPENENV_TASK_BASE_IMAGES")
    )


def map_from(image: str, mapping: dict[str, str]) -> str:
    if image in mapping:
        return mapping[image]
    python_base = os.environ.get("OPENENV_BASE_IMAGE")
    if python_base and image.startswith("python:"):
        return python_base
    return image


def rewrite_dockerfile(text: str, mapping: dict[str, str]) -> str:
    """``text`` with each ``FROM`` image mapped (stage names and ``ARG`` bases left alone)."""
    stages: set[str] = set()

    def sub(m: re.Match[str]) -> str:
        image, rest = m[2], m[3]
        alias = re.search(r"\s+AS\s+(\S+)", rest, re.IGNORECASE)
        new = image if image.lower() in stages or "$" in image else map_from(image, mapping)
        if alias:
            stages.add(alias[1].lower())
        return f"{m[1]}{new}{rest}"

    return _FROM.sub(sub, text)


def content_hash(folder: Path, mapping: dict[str, str]) -> str:
    h = hashlib.sha256()
    for key in sorted(mapping):
        h.update(f"from {key}={mapping[key]}\n".encode())
    h.update(f"python-base {os.environ.get('OPENENV_BASE_IMAGE', '')}\n".encode())
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if "__pycache__" in rel.parts:
            continue
        st = path.lstat()
        h.update(f"{rel}\0{st.st_mode:o}\0".encode())
        if path.is_symlink():
            h.update(os.readlink(path).encode())
        elif path.is_file():
            h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


def image_tag(task_id: str, folder: Path, mapping: dict[str, str]) -> str:
    name = re.sub(r"[^a-z0-9_.-]+", "-", task_id.lower()).strip(".-") or "task"
    return f"openenv-task-{name[:100]}:{content_hash(folder, mapping)}"


def _lock(tag: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(tag, threading.Lock())


def prebuilt_image(client: Any, task_id: str, image: str) -> str:
    """``image`` if the engine has it (nothing is pulled), else ``ImageBuildFailed``."""
    import docker.errors

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise ImageBuildFailed(
            f"task {task_id!r}: its docker_image {image!r} is not on this engine (pull it first)"
        ) from None
    return image


def ensure_image(
    client: Any,
    task_id: str,
    env_dir: Path,
    *,
    mapping: dict[str, str],
    timeout_s: float = 600.0,
    prebuilt: str | None = None,
) -> str:
    """The tag of the task's image, built now if the engine lacks it; one build per tag
    at a time in this process. ``ImageBuildFailed`` with the build's last lines."""
    import docker.errors

    if prebuilt and not (env_dir / "Dockerfile").is_file():
        return prebuilt_image(client, task_id, prebuilt)
    tag = image_tag(task_id, env_dir, mapping)
    with _lock(tag):
        try:
            client.images.get(tag)
            return tag
        except docker.errors.ImageNotFound:
            pass
        with tempfile.TemporaryDirectory(prefix="openenv-task-") as tmp:
            ctx = Path(tmp) / "ctx"
            shutil.copytree(env_dir, ctx, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
            dockerfile = ctx / "Dockerfile"
            dockerfile.write_text(rewrite_dockerfile(dockerfile.read_text(), mapping))
            _build(client, task_id, ctx, tag, timeout_s)
    return tag


def _build(client: Any, task_id: str, ctx: Path, tag: str, timeout_s: float) -> None:
    log: deque[str] = deque(maxlen=LOG_LINES)
    deadline = time.monotonic() + timeout_s

    def fail(why: str) -> ImageBuildFailed:
        tail = "\n".join(log)
        return ImageBuildFailed(
            f"task {task_id!r}: building its image failed: {why}" + (f"\n{tail}" if tail else "")
        )

    try:
        # timeout: each HTTP read's (the client's default is a minute): a step silent for
        # the whole build_timeout_sec ends the build too.
        stream = client.api.build(
            path=str(ctx),
            tag=tag,
            rm=True,
            forcerm=True,
            decode=True,
            labels={LABEL: task_id},
            timeout=int(timeout_s) + 2,
        )
        for chunk in stream:
            text = str(chunk.get("stream", "") or chunk.get("status", ""))
            log.extend(line for line in text.splitlines() if line.strip())
            if "error" in chunk:
                raise fail(str(chunk["error"]).strip())
            if time.monotonic() > deadline:
                stream.close()
                raise fail(f"over its build_timeout_sec ({timeout_s:g} s)")
    except ImageBuildFailed:
        raise
    except Exception as exc:  # the engine's errors, and the HTTP client's (a read timeout)
        if time.monotonic() > deadline:
            raise fail(f"over its build_timeout_sec ({timeout_s:g} s)") from None
        raise fail(str(getattr(exc, "explanation", None) or exc)) from None
