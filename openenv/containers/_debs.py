"""System packages for an env image, fetched by the host's apt so the build needs no network.

An env's ``pyproject.toml`` may ask for Debian packages::

    [tool.openenv.build]
    apt = ["chromium", "libatomic1"]

``openenv build`` then downloads exactly the ``.deb`` files the base image lacks (apt
reads the base image's own dpkg status) into ``debs/`` of the build context, and the
env's Dockerfile installs them with ``apt-get install /tmp/.../*.deb``. Needs a Debian
host whose apt suite matches the base image (bookworm) and root for apt.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from .._exceptions import ProviderError


def fetch_debs(client: Any, base_tag: str, packages: list[str], dest: Path) -> int:
    """Download ``packages`` and their dependencies missing from ``base_tag`` into
    ``dest`` (created); returns how many ``.deb`` files."""
    if shutil.which("apt-get") is None:
        raise ProviderError(
            f"this env's image needs the Debian packages {' '.join(packages)}, fetched by the host's "
            "apt-get (the build has no network); no apt-get here: build on a Debian host"
        )
    with tempfile.TemporaryDirectory(prefix="openenv-apt-") as tmp:
        work = Path(tmp)
        (work / "archives" / "partial").mkdir(parents=True)
        container = client.containers.create(base_tag, "true")
        try:
            bits, _ = container.get_archive("/var/lib/dpkg/status")
            (work / "status.tar").write_bytes(b"".join(bits))
            subprocess.run(["tar", "-xf", str(work / "status.tar"), "-C", str(work)], check=True)
        finally:
            container.remove()
        apt = [
            "apt-get", "install", "-y", "-qq", "--download-only", "--no-install-recommends",
            "-o", f"Dir::State::status={work / 'status'}",
            "-o", f"Dir::Cache::archives={work / 'archives'}",
            "-o", "Debug::NoLocking=1",
            *packages,
        ]  # fmt: skip
        if shutil.which("flock"):
            apt = ["flock", "/tmp/apt.lock", *apt]
        done = subprocess.run(apt, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise ProviderError(f"apt-get could not download {' '.join(packages)} for the image: {last}")
        dest.mkdir(parents=True, exist_ok=True)
        debs = sorted((work / "archives").glob("*.deb"))
        for deb in debs:
            shutil.move(str(deb), dest / deb.name)
    return len(debs)
