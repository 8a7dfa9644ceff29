"""Stage an env folder as a Hugging Face Docker Space: exactly the files ``push`` uploads.

The Space holds the env's sources, its ``openenv.yaml``, a README whose front-matter
says ``sdk: docker`` and ``app_port``, a ``Dockerfile`` at the root, and ``wheels/``
(the env's wheel, and openenv's own when pushed from a source checkout, so the Space
runs the openenv that was tested here and not a same-named package from an index).
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from .._exceptions import HubError
from .._extras import require
from .._manifest import Manifest, load_manifest

#: Never uploaded; a ``.openenvignore`` file adds patterns (one per line, fnmatch).
DEFAULT_IGNORE = (
    ".git", "__pycache__", "*.pyc", "*.egg-info", ".venv*", "build", "dist", "wheels",
    ".pytest_cache", ".mypy_cache", ".ruff_cache", ".DS_Store", "Dockerfile", "README.md",
    ".openenvignore",
)
IGNORE_FILE = ".openenvignore"

SPACE_DOCKERFILE = """\
# Hugging Face Space (sdk: docker) for the openenv env "{name}", written by `openenv push`.
# On the Hub it builds on python:3.11-slim and fetches dependencies from PyPI; a local
# build (`from_hub(..., trust_remote_code=True)`) passes BASE_IMAGE=<an openenv base
# image> and PIP_OPTIONS=--no-index, so it needs no network.
ARG BASE_IMAGE=python:3.11-slim
FROM ${{BASE_IMAGE}}
ARG PIP_OPTIONS=""
USER root
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 OPENENV_HOST=0.0.0.0 OPENENV_PORT={port}
COPY wheels/ /tmp/wheels/
RUN set -eu; \\
    [ -x /opt/venv/bin/python3 ] || python3 -m venv /opt/venv; \\
    /opt/venv/bin/python3 -m pip install --no-cache-dir --disable-pip-version-check $PIP_OPTIONS \\
        --find-links /tmp/wheels {requirements}; \\
    rm -rf /tmp/wheels; \\
    getent passwd 1000 >/dev/null || useradd --uid 1000 --create-home user
USER 1000:1000
EXPOSE {port}
CMD ["openenv", "serve", "{name}"]
"""


def _ignored(rel: Path, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in patterns) or any(
        fnmatch.fnmatch(rel.as_posix(), pat) for pat in patterns
    )


def source_files(env_dir: Path) -> list[Path]:
    """The env folder's files that go to the Space, relative, sorted."""
    patterns = list(DEFAULT_IGNORE)
    ignore_file = env_dir / IGNORE_FILE
    if ignore_file.is_file():
        patterns += [ln.strip() for ln in ignore_file.read_text().splitlines() if ln.strip() and ln[0] != "#"]
    files = []
    for path in sorted(env_dir.rglob("*")):
        rel = path.relative_to(env_dir)
        if path.is_file() and not _ignored(rel, patterns):
            files.append(rel)
    return files


def front_matter(readme: str, manifest: Manifest) -> str:
    """The README with Space front-matter: ours merged into any the author wrote."""
    yaml = require("yaml", extra="hub", feature="openenv push")
    meta: dict[str, Any] = {}
    body = readme
    match = re.match(r"^---\n(.*?)\n---\n?", readme, re.S)
    if match:
        loaded = yaml.safe_load(match.group(1))
        meta = loaded if isinstance(loaded, dict) else {}
        body = readme[match.end():]
    meta.setdefault("title", manifest.name)
    meta.setdefault("emoji", "🎮")
    meta.setdefault("colorFrom", "blue")
    meta.setdefault("colorTo", "green")
    meta["sdk"] = "docker"
    meta["app_port"] = manifest.port
    meta.setdefault("pinned", False)
    meta["base_path"] = "/web"
    if manifest.description:
        meta.setdefault("short_description", manifest.description[:60])
    tags = [t for t in meta.get("tags") or [] if isinstance(t, str)]
    meta["tags"] = list(dict.fromkeys([*tags, "openenv", *manifest.tags]))
    dumped = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return f"---\n{dumped}---\n\n{body.lstrip()}"


def _build_requires(source: Path) -> list[str]:
    try:
        with (source / "pyproject.toml").open("rb") as f:
            requires = tomllib.load(f).get("build-system", {}).get("requires")
    except (OSError, tomllib.TOMLDecodeError):
        requires = None
    return list(requires) if isinstance(requires, list) else ["setuptools>=40.8.0"]


def _builds_here(requires: list[str]) -> bool:
    """Whether this interpreter can build the wheel itself (``--no-build-isolation``,
    seconds faster and offline): every build requirement is installed at a version
    that satisfies it, and setuptools older than 70.1 (no ``bdist_wheel`` of its own,
    the one a fresh venv of Python 3.11 gets) has the ``wheel`` package beside it."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.version import Version
    except ImportError:  # cannot tell: let pip fetch the build requirements
        return False
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            return False
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            installed = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            return False
        if not req.specifier.contains(installed, prereleases=True):
            return False
        old_setuptools = req.name == "setuptools" and Version(installed) < Version("70.1")
        if old_setuptools and importlib.util.find_spec("wheel") is None:
            return False
    return True


def _pip_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:") or "error:" in ln.lower()]
    return (errors or lines or ["no output"])[-1].removeprefix("ERROR: ")


def _pip_wheel(source: Path, dest: Path) -> Path:
    """Build ``source``'s wheel into ``dest``: with this interpreter's setuptools when it
    can, else in pip's isolated build (which fetches the build requirements from the
    index); a failure is one line (``HubError``) saying what to install."""
    before = set(dest.glob("*.whl"))
    requires = _build_requires(source)
    here = _builds_here(requires)
    cmd = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--disable-pip-version-check",
           "--wheel-dir", str(dest), str(source)]
    if here:
        cmd.insert(4, "--no-build-isolation")
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    made = sorted(set(dest.glob("*.whl")) - before)
    if result.returncode != 0 or not made:
        fix = (
            "" if here else
            f"; pip could not fetch its build requirements ({', '.join(requires)}): "
            "install them here (pip install 'setuptools>=70.1') or let pip reach an index"
        )
        raise HubError(f"cannot build the wheel of {source}: {_pip_error(result.stderr)}{fix}")
    return made[0]


def _openenv_source() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "openenv").is_dir() else None


_wheel_cache: dict[str, Path] = {}


def _openenv_wheel(root: Path, dest: Path) -> str:
    """openenv's own wheel, built once per process (the openenv this process runs)."""
    key = str(root)
    wheel = _wheel_cache.get(key)
    if wheel is None or not wheel.is_file():
        wheel = _pip_wheel(root, Path(tempfile.mkdtemp(prefix="openenv-wheel-")))
        _wheel_cache[key] = wheel
    shutil.copy2(wheel, dest / wheel.name)
    return wheel.name


def stage_space(env_dir: str | Path, dest: str | Path) -> list[str]:
    """Write the Space's files for ``env_dir`` into ``dest``; returns their paths, sorted."""
    src, out = Path(env_dir).resolve(), Path(dest)
    manifest = load_manifest(src)
    for rel in source_files(src):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, out / rel)
    readme = (src / "README.md").read_text() if (src / "README.md").is_file() else f"# {manifest.name}\n"
    (out / "README.md").write_text(front_matter(readme, manifest))
    wheels = out / "wheels"
    wheels.mkdir(exist_ok=True)
    # The wheels by path: an index may hold a higher "openenv" (upstream's) that a bare
    # requirement would pick instead of ours.
    requirements = [f'"/tmp/wheels/{_pip_wheel(src, wheels).name}"']
    openenv_src = _openenv_source()
    if openenv_src is not None:
        requirements.insert(0, f'"/tmp/wheels/{_openenv_wheel(openenv_src, wheels)}[server]"')
    else:
        from .._version import __version__

        requirements.insert(0, f'"openenv[server]=={__version__}"')
    (out / "Dockerfile").write_text(
        SPACE_DOCKERFILE.format(name=manifest.name, port=manifest.port, requirements=" ".join(requirements))
    )
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
