"""``scripts/docker/build_base_image.sh --print-mirror``: the Debian mirror apt uses."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "docker" / "build_base_image.sh"


def mirror(apt_dir: Path, **env: str) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_")}
    full.update(OPENENV_APT_DIR=str(apt_dir), **env)
    proc = subprocess.run(["bash", str(SCRIPT), "--print-mirror"], env=full, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture
def apt(tmp_path: Path) -> Path:
    (tmp_path / "sources.list.d").mkdir()
    return tmp_path


def test_deb822_sources_give_the_suites_mirror_not_security(apt):
    (apt / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n"
        "URIs: http://security.example/debian-security\n"
        "Suites: bookworm-security\n"
        "Components: main\n"
        "\n"
        "# a comment\n"
        "Types: deb deb-src\n"
        "URIs: http://mirror.example/debian/\n"
        "Suites: bookworm bookworm-updates\n"
        "Components: main\n"
    )
    assert mirror(apt) == "http://mirror.example/debian"


def test_one_line_sources_with_options(apt):
    (apt / "sources.list").write_text(
        "# deb http://commented.example/debian bookworm main\n"
        "deb-src http://src.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://list.example/debian bookworm main\n"
    )
    assert mirror(apt) == "http://list.example/debian"


def test_disabled_stanza_and_other_suites_are_skipped(apt):
    (apt / "sources.list.d" / "a.sources").write_text(
        "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nEnabled: no\n\n"
        "Types: deb\nURIs: http://trixie.example/debian\nSuites: trixie\n"
    )
    (apt / "sources.list.d" / "b.list").write_text("deb http://b.example/debian bookworm main\n")
    assert mirror(apt) == "http://b.example/debian"


def test_no_apt_configuration_falls_back_to_deb_debian_org(apt):
    assert mirror(apt) == "http://deb.debian.org/debian"


def test_the_variable_wins(apt):
    (apt / "sources.list").write_text("deb http://list.example/debian bookworm main\n")
    assert mirror(apt, OPENENV_DEBIAN_MIRROR="http://chosen.example/debian") == "http://chosen.example/debian"
