"""Build the browser env's image with no network inside the build (works offline).

Like ``openenv build envs/browser_env``, plus Debian's Chromium: the host's apt
downloads chromium and exactly the packages the base image lacks (it reads the base
image's dpkg status), and the build installs those ``.deb`` files. Needs Docker, a
Debian host whose apt suite matches the base image (bookworm), and root for apt.

    python envs/browser_env/build_image.py --base-image openenv-local/python:3.11-bookworm
    docker run --rm -p 127.0.0.1:8000:8000 openenv-browser
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

from openenv.containers._build import _docker_build, _pip_wheel, build_base, read_env_project
from openenv.containers._docker import docker_client

HERE = Path(__file__).resolve().parent


def fetch_debs(client: object, base_tag: str, dest: Path) -> int:
    """Download chromium's .debs missing from ``base_tag`` into ``dest``; how many."""
    work = dest.parent / "apt"
    (work / "archives" / "partial").mkdir(parents=True)
    container = client.containers.create(base_tag, "true")  # type: ignore[attr-defined]
    try:
        bits, _ = container.get_archive("/var/lib/dpkg/status")
        tar = work / "status.tar"
        tar.write_bytes(b"".join(bits))
        subprocess.run(["tar", "-xf", str(tar), "-C", str(work)], check=True)
    finally:
        container.remove()
    apt = [
        "flock", "/tmp/apt.lock", "apt-get", "install", "-y", "-qq", "--download-only",
        "--no-install-recommends",
        "-o", f"Dir::State::status={work / 'status'}",
        "-o", f"Dir::Cache::archives={work / 'archives'}",
        "-o", "Debug::NoLocking=1",
        "chromium", "libatomic1",  # libatomic1: Playwright's bundled node needs it
    ]  # fmt: skip
    subprocess.run(apt, check=True, capture_output=True)
    dest.mkdir()
    debs = sorted((work / "archives").glob("*.deb"))
    for deb in debs:
        shutil.move(str(deb), dest / deb.name)
    return len(debs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-image", default="python:3.11-slim")
    parser.add_argument("--tag", default="openenv-browser")
    parser.add_argument("--no-cache", action="store_true")
    args = parser.parse_args()
    client = docker_client()
    project = read_env_project(HERE)
    base_tag = build_base(args.base_image, client=client)
    with tempfile.TemporaryDirectory(prefix="openenv-browser-") as tmp:
        ctx = Path(tmp) / "ctx"
        (ctx / "wheels").mkdir(parents=True)
        # Wheel a clean copy: building in place would leave build/ in the source tree.
        src = Path(tmp) / "src"
        shutil.copytree(
            HERE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests")
        )
        _pip_wheel(["--no-deps", str(src)], ctx / "wheels", print)
        # Only miniwob's pages are used: not its Python dependencies (selenium, numpy, ...).
        deps = [d for d in project["dependencies"] if not d.startswith("miniwob")]
        _pip_wheel(deps, ctx / "wheels", print)
        _pip_wheel(
            ["--no-deps", *(d for d in project["dependencies"] if d.startswith("miniwob"))],
            ctx / "wheels",
            print,
        )
        print(f"{fetch_debs(client, base_tag, ctx / 'debs')} .debs for chromium")
        shutil.copy(HERE / "Dockerfile", ctx / "Dockerfile")
        _docker_build(client, ctx, args.tag, {"OPENENV_BASE": base_tag}, args.no_cache, print)


if __name__ == "__main__":
    main()
