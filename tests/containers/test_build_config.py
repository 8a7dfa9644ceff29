"""An env's [tool.openenv.build] table: Debian packages for the host's apt, and
dependencies wheeled without theirs (what made `openenv build envs/browser_env` work)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv._exceptions import ProviderError
from openenv.containers._build import read_env_project

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, tool: str) -> Path:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x-env"\ndependencies = ["openenv", "miniwob==1.1.0", "playwright>=1.5"]\n'
        '[project.entry-points."openenv.envs"]\nx = "x_env:XEnv"\n' + tool
    )
    return tmp_path


def test_apt_and_no_deps_are_read(tmp_path: Path) -> None:
    table = '[tool.openenv.build]\napt = ["chromium"]\nno-deps = ["miniwob"]\n'
    project = read_env_project(_env(tmp_path, table))
    assert project["apt"] == ["chromium"]
    assert project["no_deps"] == ["miniwob==1.1.0"]
    assert project["dependencies"] == ["playwright>=1.5"]  # openenv is the base's


def test_without_the_table_nothing_changes(tmp_path: Path) -> None:
    project = read_env_project(_env(tmp_path, ""))
    assert (project["apt"], project["no_deps"]) == ([], [])
    assert project["dependencies"] == ["miniwob==1.1.0", "playwright>=1.5"]


def test_a_malformed_table_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match=r"\[tool.openenv.build\] apt must be a list of strings"):
        read_env_project(_env(tmp_path, '[tool.openenv.build]\napt = "chromium"\n'))


def test_the_browser_env_asks_for_chromium() -> None:
    project = read_env_project(ROOT / "envs" / "browser_env")
    assert project["apt"] == ["chromium", "libatomic1"]
    assert project["no_deps"] == ["miniwob==1.1.0"]
