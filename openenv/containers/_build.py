"""``openenv build``: env folder -> Docker image, with no network inside the build.

Two images, two Dockerfiles:

* the shared base (``docker/base.Dockerfile``, tag ``openenv-base:<version>-<base>``):
  a venv with ``openenv[server,mcp]`` and dumb-init, uid 1000, ``HEALTHCHECK``, port 8000;
* the env image (``<env folder>/Dockerfile``, tag ``openenv-<name>``): ``FROM`` the
  base, adds only that env's wheels (and the ``.deb`` files its ``[tool.openenv.build]
  apt`` asks for) with the base's ``openenv-install-env``, ``CMD ["openenv", "serve",
  "<name>"]``.

Wheels are built on the host (``pip wheel``, from a copy of each project's sources:
``source_copy``) into each build context, and every ``RUN`` installs with ``--no-index``
(the env images through the base's ``openenv-install-env``, ``docker/openenv-install-env``);
builds run with ``network_mode="none"``. That is
what makes them work offline (a local base image from debootstrap) and with the public
``python:3.11-slim`` elsewhere alike.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._exceptions import ProviderError
from ._build_upstream import (
    is_upstream_folder,
    upstream_requirements,
    upstream_tag,
    write_upstream_context,
)
from ._docker import using_client
from ._labels import oci_labels

DEFAULT_BASE_IMAGE = "python:3.11-slim"
Progress = Callable[[str], None]


def source_root() -> Path:
    """The openenv source tree (needed to build its wheel and find ``docker/``)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "docker" / "base.Dockerfile").is_file():
        raise ProviderError(
            f"openenv build needs the openenv source tree (pyproject.toml and docker/); not found at {root}"
        )
    return root


def read_env_project(env_dir: Path) -> dict[str, Any]:
    """Name, dependencies and served name of an env folder (its pyproject.toml)."""
    pyproject = env_dir / "pyproject.toml"
    if not env_dir.is_dir():
        raise ProviderError(f"no env folder {str(env_dir)!r}")
    if not pyproject.is_file():
        raise ProviderError(f"{env_dir} has no pyproject.toml")
    if not (env_dir / "Dockerfile").is_file():
        raise ProviderError(f"{env_dir} has no Dockerfile (copy envs/echo_env/Dockerfile)")
    with pyproject.open("rb") as f:
        project = tomllib.load(f).get("project", {})
    entries = project.get("entry-points", {}).get("openenv.envs", {})
    if not entries:
        raise ProviderError(f'{pyproject} has no [project.entry-points."openenv.envs"] table')
    deps = [d for d in project.get("dependencies", []) if _dist_name(d) != "openenv"]
    build = _build_table(pyproject)
    no_deps = {_dist_name(d) for d in build.get("no-deps", [])}
    return {
        "name": project["name"],
        "serve_name": next(iter(entries)),
        "dependencies": [d for d in deps if _dist_name(d) not in no_deps],
        "no_deps": [d for d in deps if _dist_name(d) in no_deps],
        "apt": list(build.get("apt", [])),
    }


def _build_table(pyproject: Path) -> dict[str, Any]:
    """``[tool.openenv.build]``: ``apt`` (Debian packages fetched by the host, see
    ``_debs``) and ``no-deps`` (dependencies wheeled without their own dependencies)."""
    with pyproject.open("rb") as f:
        table = tomllib.load(f).get("tool", {}).get("openenv", {}).get("build", {})
    for key in ("apt", "no-deps"):
        value = table.get(key, [])
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ProviderError(f"{pyproject}: [tool.openenv.build] {key} must be a list of strings")
    return dict(table)


def _dist_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


#: Build output and caches: never part of a copy a wheel is built from.
_NOT_SOURCE = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "dist", "*.egg-info")


def source_copy(project: Path, dest: Path) -> Path:
    """A copy of ``project`` to build its wheel from (``dest``, returned): its top-level
    files and its packages (top-level folders with an ``__init__.py``), no build output.
    ``pip wheel`` builds in the folder it is given (setuptools writes ``build/`` and
    ``*.egg-info`` there), so two builds of one checkout at once, or a build beside an
    editable install, collided on ``build/bdist.*`` ("File exists")."""
    dest.mkdir(parents=True)
    for path in sorted(project.iterdir()):
        if path.name.startswith(".") or path.name.endswith(".egg-info"):
            continue
        if path.is_file():
            shutil.copy2(path, dest / path.name)
        elif path.is_dir() and path.name != "build" and (path / "__init__.py").is_file():
            shutil.copytree(path, dest / path.name, ignore=_NOT_SOURCE)
    return dest


def _pip_wheel(args: list[str], dest: Path, progress: Progress) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--disable-pip-version-check",
        "--wheel-dir",
        str(dest),
        *args,
    ]
    progress(f"pip wheel {' '.join(args)}")
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise ProviderError(f"pip wheel failed:\n{result.stderr[-3000:]}")


def _docker_build(
    client: Any,
    context: Path,
    tag: str,
    buildargs: dict[str, str],
    no_cache: bool,
    progress: Progress,
    labels: dict[str, str] | None = None,
) -> None:
    t0 = time.monotonic()
    stream = client.api.build(
        path=str(context),
        dockerfile="Dockerfile",
        tag=tag,
        buildargs=buildargs,
        rm=True,
        forcerm=True,
        nocache=no_cache,
        network_mode="none",
        labels=labels or None,
        decode=True,
    )
    for chunk in stream:
        if "error" in chunk:
            raise ProviderError(f"docker build of {tag} failed: {chunk['error'].strip()}")
        line = str(chunk.get("stream", "")).strip()
        if line.startswith("Step "):
            progress(f"  {line[:110]}")
    progress(f"built {tag} in {time.monotonic() - t0:.0f} s")


#: What the shared base installs: the server and the MCP bridge (``openenv mcp IMAGE``).
BASE_EXTRAS = "server,mcp"
#: The script every env Dockerfile installs its context with (``/opt/venv/bin`` in the base).
INSTALLER = "docker/openenv-install-env"
#: The base's moving tag, also set on each base built or reused: the ``OPENENV_BASE``
#: default of the env Dockerfiles, so a plain ``docker build`` of a context finds a base.
LATEST = "openenv-base:latest"


def base_image_tag(base_image: str) -> str:
    """``openenv-base:<version>-<digest>``, the digest over the base image's name, the
    extras and openenv's own sources: a changed openenv never reuses a stale base."""
    from .._version import __version__

    h = hashlib.sha1(f"{base_image}\n{BASE_EXTRAS}\n".encode())
    root = source_root()
    for path in sorted((root / "openenv").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    for extra in ("pyproject.toml", "docker/base.Dockerfile", INSTALLER):
        if (root / extra).is_file():
            h.update((root / extra).read_bytes())
    return f"openenv-base:{__version__}-{h.hexdigest()[:10]}"


def build_base(
    base_image: str = DEFAULT_BASE_IMAGE,
    *,
    rebuild: bool = False,
    no_cache: bool = False,
    client: Any = None,
    progress: Progress = print,
) -> str:
    """Build (or reuse) the shared base image; returns its tag."""
    import docker.errors

    with using_client(client) as client:
        tag = base_image_tag(base_image)
        if not rebuild:
            try:
                client.images.get(tag).tag(*LATEST.split(":"))
                progress(f"reusing {tag} (base {base_image})")
                return tag
            except docker.errors.ImageNotFound:
                pass
        if not _have_image(client, base_image):
            _pull(client, base_image, progress)
        root = source_root()
        with tempfile.TemporaryDirectory(prefix="openenv-base-") as tmp:
            ctx = Path(tmp) / "ctx"
            ctx.mkdir()
            src = source_copy(root, Path(tmp) / "src")
            _pip_wheel([f"{src}[{BASE_EXTRAS}]", "dumb-init"], ctx, progress)
            (ctx / "requirements.txt").write_text(f"openenv[{BASE_EXTRAS}]\ndumb-init\n")
            shutil.copy(root / "docker" / "base.Dockerfile", ctx / "Dockerfile")
            shutil.copy(root / INSTALLER, ctx / "openenv-install-env")
            _docker_build(client, ctx, tag, {"BASE_IMAGE": base_image}, no_cache, progress)
        client.images.get(tag).tag(*LATEST.split(":"))
        return tag


def _no_base_image(base_image: str, error: str) -> str:
    """One line: the base image could not be had (no registry), and what to pass instead."""
    reason = " ".join(error.split())
    reason = reason if len(reason) <= 160 else reason[:157] + "..."
    return (
        f"cannot get the base image {base_image} ({reason}); without a registry, build on a local "
        "one: `bash scripts/docker/build_base_image.sh`, then "
        "--base-image openenv-local/python:3.11-bookworm (or any local python image)"
    )


def _pull(client: Any, image: str, progress: Progress) -> None:
    """Pull the base image before anything is built: a missing registry fails here, in
    one line that names ``--base-image``."""
    import docker.errors

    progress(f"pulling {image}")
    try:
        client.images.pull(image)
    except docker.errors.DockerException as exc:
        reason = getattr(exc, "explanation", None) or str(exc)
        raise ProviderError(_no_base_image(image, str(reason))) from None


def _have_image(client: Any, name: str) -> bool:
    import docker.errors

    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


def build_env_image(
    env_dir: str | Path,
    *,
    tag: str | None = None,
    base_image: str = DEFAULT_BASE_IMAGE,
    rebuild_base: bool = False,
    no_cache: bool = False,
    client: Any = None,
    progress: Progress = print,
) -> str:
    """Build the image of one env folder on the shared base; returns its tag."""
    env_path = Path(env_dir).resolve()
    upstream = env_path.is_dir() and is_upstream_folder(env_path)
    project = None if upstream else read_env_project(env_path)
    with using_client(client) as client:
        base_tag = build_base(
            base_image, rebuild=rebuild_base, no_cache=no_cache, client=client, progress=progress
        )
        if project is None:
            return _build_upstream(env_path, base_tag, tag, no_cache, client, progress)
        tag = tag or f"openenv-{project['serve_name'].replace('_', '-')}"
        with tempfile.TemporaryDirectory(prefix="openenv-env-") as tmp:
            ctx = Path(tmp) / "ctx"
            (ctx / "wheels").mkdir(parents=True)
            _pip_wheel(["--no-deps", str(source_copy(env_path, Path(tmp) / "src"))], ctx / "wheels", progress)
            if project["dependencies"]:
                _pip_wheel(project["dependencies"], ctx / "wheels", progress)
            if project["no_deps"]:
                _pip_wheel(["--no-deps", *project["no_deps"]], ctx / "wheels", progress)
            if project["apt"]:
                from ._debs import fetch_debs

                count = fetch_debs(client, base_tag, project["apt"], ctx / "debs")
                progress(f"{count} .deb files for {' '.join(project['apt'])}")
            shutil.copy(env_path / "Dockerfile", ctx / "Dockerfile")
            labels = oci_labels(env_path)  # what validate's static.oci_labels judges
            _docker_build(client, ctx, tag, {"OPENENV_BASE": base_tag}, no_cache, progress, labels)
        return tag


def _build_upstream(
    env_dir: Path, base_tag: str, tag: str | None, no_cache: bool, client: Any, progress: Progress
) -> str:
    """An upstream OpenEnv folder on the shared base (see ``_build_upstream``)."""
    tag = tag or upstream_tag(env_dir)
    progress(
        f"{env_dir.name}: an upstream OpenEnv folder; served by openenv.core on the openenv base "
        "(its server/Dockerfile is upstream's and is not used)"
    )
    requirements = upstream_requirements(env_dir)
    with tempfile.TemporaryDirectory(prefix="openenv-env-") as tmp:
        ctx = Path(tmp) / "ctx"
        (ctx / "wheels").mkdir(parents=True)
        if requirements:
            _pip_wheel(requirements, ctx / "wheels", progress)
        write_upstream_context(env_dir, ctx, requirements)
        labels = oci_labels(env_dir)
        _docker_build(client, ctx, tag, {"OPENENV_BASE": base_tag}, no_cache, progress, labels)
    return tag
