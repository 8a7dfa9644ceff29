"""``openenv build`` of an upstream env folder: which folders count, what gets installed.
The image itself is built and run with a real engine in tests/docker/test_upstream_image.py."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from openenv import ProviderError
from openenv.containers._build_upstream import (
    UPSTREAM_RUNTIME,
    is_upstream_folder,
    upstream_name,
    upstream_requirements,
    upstream_tag,
)

REPO = Path(__file__).resolve().parents[2]
COUNTER = REPO / "tests" / "core" / "upstream_envs" / "counter_env"


def _folder(root: Path, name: str = "my_env", yaml_name: str | None = "my_env") -> Path:
    folder = root / name
    (folder / "server").mkdir(parents=True)
    (folder / "server" / "app.py").write_text("app = None\n")
    manifest = f"spec_version: 1\nname: {yaml_name}\n" if yaml_name else "spec_version: 1\n"
    (folder / "openenv.yaml").write_text(manifest)
    return folder


def test_the_shipped_upstream_style_folder_counts() -> None:
    assert is_upstream_folder(COUNTER)


def test_our_env_folders_do_not_count() -> None:
    for env in ("echo_env", "arith_env", "coding_env", "terminal_env", "browser_env"):
        assert not is_upstream_folder(REPO / "envs" / env), env


def test_a_folder_with_our_entry_point_is_built_as_ours(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[project.entry-points."openenv.envs"]\nx = "x:X"\n'
    )
    assert not is_upstream_folder(folder)


def test_needs_both_the_manifest_and_the_app(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "server" / "app.py").unlink()
    assert not is_upstream_folder(folder)


def test_dependencies_from_pyproject_without_openenv(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "openenv-my-env"\ndependencies = ["openenv[core]>=0.2.2", '
        '"openenv_core>=0.1", "numpy>=1.24", "fastmcp==3.1.0"]\n'
    )
    # upstream's package is dropped; fastmcp as declared, requests added from the runtime
    assert upstream_requirements(folder) == ["numpy>=1.24", "fastmcp==3.1.0", "requests>=2.25,<3"]


def test_dependencies_from_requirements_txt(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    listed = "# deps\nopenenv-core\nchess>=1.10  # the game\n\n-e .\n"
    (folder / "server" / "requirements.txt").write_text(listed)
    assert upstream_requirements(folder) == ["chess>=1.10", *UPSTREAM_RUNTIME]


def test_no_declared_dependencies_still_get_the_runtime() -> None:
    assert upstream_requirements(COUNTER) == list(UPSTREAM_RUNTIME)


def test_the_runtime_is_the_upstream_extra() -> None:
    with (REPO / "pyproject.toml").open("rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert extras["upstream"] == list(UPSTREAM_RUNTIME)


def test_name_from_the_manifest_else_the_folder(tmp_path: Path) -> None:
    assert upstream_name(_folder(tmp_path, "a_env", "named_env")) == "named_env"
    assert upstream_name(_folder(tmp_path, "b_env", None)) == "b_env"


def test_a_folder_name_that_is_no_package_is_refused_before_any_build(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "my-env")
    with pytest.raises(ProviderError, match="not a Python package name"):
        upstream_tag(folder)
