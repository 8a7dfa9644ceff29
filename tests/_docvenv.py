"""A venv holding exactly what a docs page tells its reader to install, for tests/test_docs.py.

A page says it with a marker, in force from there on (``<!-- docs-test: venv standard +envs -->``):
the extras of ``pip install 'openenv[EXTRAS]'`` (comma-separated; ``-`` for none) and,
with ``+envs``, every env of ``envs/``: what ``bash scripts/demo.sh`` (``standard
+envs``) or ``OPENENV_EXTRAS=all bash scripts/setup.sh`` (``all +envs``) install.

The venv is made as the reader's is (``python -m venv``: the pip and setuptools a fresh
venv of this Python has; pip upgraded, as scripts/setup.sh does), and filled from the
distributions already installed in ``.venv``: the dependency closure of what the page
names, resolved from their metadata, hard-linked (no network, about a second). A page
that needs a package it does not name fails on the import, as it would for its reader.
A block may install more (``pip install pytest``); that stays in this page's venv.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "docs-venvs"
SITE = Path(sysconfig.get_paths()["purelib"])  # .venv's site-packages: the test runs in .venv
#: What a fresh ``python -m venv`` holds, and the version of each (its setuptools cannot
#: build a wheel without the ``wheel`` package: the case the reader meets).
FRESH = ("setuptools", "pkg_resources", "_distutils_hack", "distutils-precedence.pth")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_profile(text: str) -> tuple[frozenset[str], bool]:
    """``"standard +envs"`` -> ``({"standard"}, True)``; ``"-"`` -> no extras."""
    words = text.split()
    if not words:
        raise ValueError("a venv marker names the extras, e.g. 'venv standard +envs'")
    extras = frozenset() if words[0] == "-" else frozenset(e for e in words[0].split(",") if e)
    rest = set(words[1:])
    if rest - {"+envs"}:
        raise ValueError(f"unknown venv words {sorted(rest - {'+envs'})}: only '+envs'")
    return extras, "+envs" in rest


def _installed() -> dict[str, md.Distribution]:
    found: dict[str, md.Distribution] = {}
    for dist in md.distributions(path=[str(SITE)]):
        found.setdefault(_norm(dist.metadata["Name"]), dist)
    return found


def _env_projects() -> list[str]:
    names = []
    for pyproject in sorted(ROOT.glob("envs/*/pyproject.toml")):
        with pyproject.open("rb") as f:
            names.append(tomllib.load(f)["project"]["name"])
    return names


def closure(extras: frozenset[str], envs: bool) -> list[md.Distribution]:
    """The installed distributions ``pip install 'openenv[extras]'`` (and the envs) brings."""
    installed = _installed()
    todo: list[tuple[str, frozenset[str]]] = [("openenv", extras)]
    todo += [(_norm(name), frozenset()) for name in (_env_projects() if envs else [])]
    seen: set[tuple[str, str]] = set()
    chosen: dict[str, md.Distribution] = {}
    while todo:
        name, wanted = todo.pop()
        dist = installed.get(_norm(name))
        if dist is None:
            raise LookupError(f"{name} is not installed in .venv: cannot link it into a docs venv")
        chosen[_norm(name)] = dist
        for extra in ("", *sorted(wanted)):
            if (_norm(name), extra) in seen:
                continue
            seen.add((_norm(name), extra))
            for text in dist.requires or []:
                req = Requirement(text)
                if req.marker is not None and not req.marker.evaluate({"extra": extra}):
                    continue
                if req.marker is None and extra:
                    continue  # an unconditional requirement: taken with extra ""
                todo.append((req.name, frozenset(req.extras)))
    return sorted(chosen.values(), key=lambda d: _norm(d.metadata["Name"]))


def _tops(dist: md.Distribution) -> set[str]:
    """The top-level names of ``dist`` in site-packages (packages, modules, .pth, dist-info)."""
    tops = {Path(str(dist._path)).name}  # type: ignore[attr-defined]
    for file in dist.files or []:
        parts = Path(str(file)).parts
        if parts and parts[0] != ".." and parts[0] != "__pycache__":
            tops.add(parts[0])
    return tops


def _link_or_copy(src: str, dst: str) -> None:
    if os.path.exists(dst) and os.path.samefile(src, dst):  # a namespace package (google/) of two dists
        return
    try:
        os.link(src, dst)
    except OSError:  # another file system: a copy
        shutil.copy2(src, dst)


def _link(src_site: Path, name: str, dest_site: Path) -> None:
    src, dst = src_site / name, dest_site / name
    if src.is_dir():
        shutil.copytree(src, dst, copy_function=_link_or_copy, dirs_exist_ok=True, symlinks=True)
    elif src.exists() and not dst.exists():
        _link_or_copy(str(src), str(dst))


def _fresh_venv(python: str) -> Path:
    """A venv exactly as ``python -m venv`` makes it, made once and kept in .cache."""
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    fresh = CACHE / f"fresh-{version}"
    if not (fresh / ".done").exists():
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([python, "-m", "venv", str(fresh)], check=True, capture_output=True)
        (fresh / ".done").touch()
    return fresh


def _site_of(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise LookupError(f"{venv} has no site-packages")
    return found[0]


def _console_scripts(dists: list[md.Distribution], bin_dir: Path) -> None:
    python = bin_dir / "python"
    for dist in dists:
        for ep in dist.entry_points.select(group="console_scripts"):
            module, _, attr = ep.value.partition(":")
            script = bin_dir / ep.name
            script.write_text(
                f"#!{python}\nimport sys\nfrom {module} import {attr.split('.')[0]}\n"
                f"sys.exit({attr}())\n"
            )
            script.chmod(0o755)


def fingerprint(venv: Path) -> tuple[tuple[str, str, int], ...]:
    """What is installed in ``venv``, cheaply: each entry of its ``bin`` and site-packages
    with its mtime (a ``pip install`` or uninstall adds, removes or remakes one; byte-code
    caches are left out: they change nothing a page sees)."""
    found = []
    for folder in (venv / "bin", _site_of(venv)):
        for entry in os.scandir(folder):
            if entry.name != "__pycache__":
                found.append((folder.name, entry.name, entry.stat(follow_symlinks=False).st_mtime_ns))
    return tuple(sorted(found))


def _discard(venv: Path, where: Path) -> None:
    """Take ``venv`` out of use at once: renamed into ``where``'s trash, whose files the
    next pool made there removes. Unlinking a venv of 50,000 hard links takes 3-10 s;
    a run in a fresh clone (CI) never waits for it."""
    trash = where / "trash"
    trash.mkdir(parents=True, exist_ok=True)
    try:
        venv.rename(trash / f"{venv.name}-{time.time_ns()}")
    except OSError:  # gone already, or another file system
        shutil.rmtree(venv, ignore_errors=True)


def _empty_trash(where: Path) -> None:
    """Remove what earlier runs discarded (a concurrent run's later discards included:
    they are out of use too), and the pools of runs that were killed before their end."""
    for left in [*where.glob("pool-*-*"), *where.glob("trash-*-*")]:  # a killed run's pools and trash
        pid = left.name.split("-")[1]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            _discard(left, where)
    trash = where / "trash"
    if not trash.exists():
        return
    doomed = where / f"trash-{os.getpid()}-{time.time_ns()}"
    with contextlib.suppress(OSError):  # another run took it first
        trash.rename(doomed)
        shutil.rmtree(doomed, ignore_errors=True)


class Pool:
    """One venv a profile for a whole test run, shared by the pages that name the same
    profile; a page that changed its venv (``pip install pytest``) gives it back changed,
    and the pool drops it, so the next page gets a fresh one: each page still sees exactly
    what it tells its reader to install. What it drops, and every venv at ``close()``, goes
    to the trash at once (``_discard``); the next pool empties it."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.venvs: dict[str, tuple[Path, tuple[tuple[str, str, int], ...]]] = {}
        self.made = 0
        _empty_trash(where)

    def take(self, profile: str) -> Path:
        """The venv ``profile`` names, as built (its root folder)."""
        if profile not in self.venvs:
            dest = self.where / f"pool-{os.getpid()}-{self.made}"
            self.made += 1
            shutil.rmtree(dest, ignore_errors=True)
            try:
                build(dest, profile)
            except BaseException:
                shutil.rmtree(dest, ignore_errors=True)  # the pool keeps only whole venvs
                raise
            self.venvs[profile] = (dest, fingerprint(dest))
        return self.venvs[profile][0]

    def give_back(self, profile: str) -> None:
        """After a page: drop the venv if the page changed what it holds."""
        dest, made = self.venvs.get(profile, (None, None))
        if dest is not None and fingerprint(dest) != made:
            del self.venvs[profile]
            _discard(dest, self.where)

    def close(self) -> None:
        for dest, _ in self.venvs.values():
            _discard(dest, self.where)
        self.venvs.clear()


def build(dest: Path, profile: str) -> Path:
    """Make the venv ``profile`` names at ``dest``; returns its ``bin`` folder."""
    extras, envs = parse_profile(profile)
    python = getattr(sys, "_base_executable", sys.executable)
    fresh = _fresh_venv(python)
    subprocess.run([python, "-m", "venv", "--without-pip", str(dest)], check=True, capture_output=True)
    dest_site, fresh_site = _site_of(dest), _site_of(fresh)
    for item in fresh_site.iterdir():  # setuptools as a fresh venv has it (pip comes from .venv)
        if item.name.startswith(FRESH) and not item.name.startswith("pip"):
            _link(fresh_site, item.name, dest_site)
    installed = _installed()
    dists = [*closure(extras, envs), installed["pip"]]
    for dist in dists:
        for top in _tops(dist):
            _link(SITE, top, dest_site)
    _console_scripts(dists, dest / "bin")
    return dest / "bin"
