"""No doc, README, Dockerfile or script shows ``docker run`` publishing a server on
every interface: an env server takes no token unless given one, so a bare
``-p 8000:8000`` opens it to the network. A command publishes on 127.0.0.1, or gives
the server a token (``OPENENV_AUTH_TOKEN`` / ``--auth-token``) on the same command.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_RUN = re.compile(r"\b(?:docker|podman)(?:\s+container)?\s+(?:run|create)\b")
_PUBLISH = re.compile(r"(?:^|\s)(?:-p|--publish)(?:\s+|=)([^\s]+)")
_LOOPBACK = ("127.0.0.1:", "[::1]:", "localhost:")
_TOKEN = re.compile(r"OPENENV_AUTH_TOKEN|--auth-token")


def _pages() -> list[Path]:
    globs = (
        "README.md",
        "docs/**/*.md",
        "rfcs/*.md",
        "examples/**/*.md",
        "envs/*/README.md",
        "envs/*/Dockerfile",
        "docker/*",
        "scripts/**/*.sh",
        "openenv/authoring/templates/*",
    )
    return sorted({p for g in globs for p in ROOT.glob(g) if p.is_file()})


def _commands(text: str) -> list[tuple[int, str]]:
    """(first line number, command) for each logical line: backslash continuations
    joined, a Dockerfile comment's ``#`` kept out of the way."""
    out: list[tuple[int, str]] = []
    start, pending = 0, ""
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip("#").strip() if raw.lstrip().startswith("#") else raw
        if not pending:
            start = n
        pending += " " + line.rstrip("\\")
        if not line.rstrip().endswith("\\"):
            out.append((start, pending.strip()))
            pending = ""
    if pending:
        out.append((start, pending.strip()))
    return out


def unbound_publishes(text: str) -> list[tuple[int, str]]:
    """The ``docker run`` commands that publish a port beyond loopback with no token."""
    found = []
    for n, command in _commands(text):
        if not _RUN.search(command) or _TOKEN.search(command):
            continue
        for spec in _PUBLISH.findall(command):
            spec = spec.strip("\"'`")
            if not spec.startswith(_LOOPBACK):
                found.append((n, command))
    return found


def test_the_check_catches_what_it_is_for() -> None:
    assert unbound_publishes("docker run -p 8000:8000 openenv-echo")
    assert unbound_publishes("docker run --rm --publish=8000:8000 x")
    assert unbound_publishes("#   docker run -p 8000 openenv-echo")
    assert unbound_publishes("docker run -d \\\n    -p 0.0.0.0:8000:8000 x")
    assert unbound_publishes("openenv build . && docker run -p 8000:8000 openenv-x")
    assert not unbound_publishes("docker run -p 127.0.0.1:8000:8000 openenv-echo")
    assert not unbound_publishes('docker run -d -p "127.0.0.1:$PORT:8000" x')
    assert not unbound_publishes("docker run -e OPENENV_AUTH_TOKEN=t -p 8000:8000 x")
    assert not unbound_publishes("mkdir -p 8000")  # not a docker command


@pytest.mark.parametrize("page", [str(p.relative_to(ROOT)) for p in _pages()])
def test_no_page_publishes_a_server_on_every_interface(page: str) -> None:
    found = unbound_publishes((ROOT / page).read_text(encoding="utf-8", errors="replace"))
    assert not found, (
        f"{page}: `docker run` publishes beyond 127.0.0.1 with no token "
        f"(use -p 127.0.0.1:8000:8000, or set OPENENV_AUTH_TOKEN): {found}"
    )


def test_the_pages_checked_include_the_env_images_and_readmes() -> None:
    names = {str(p.relative_to(ROOT)) for p in _pages()}
    for env in ("echo_env", "terminal_env", "coding_env", "browser_env", "arith_env"):
        assert f"envs/{env}/Dockerfile" in names
    assert {"README.md", "envs/terminal_env/README.md", "docker/README.md"} <= names
