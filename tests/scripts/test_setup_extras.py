"""The installs match the journey (issue 20): the README's first command sets up serving
and driving envs without the training stack; training is one extra (`all`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _expand(extra: str) -> set[str]:
    """The extras an extra pulls in through openenv[...] self-references, itself included."""
    seen = {extra}
    for req in EXTRAS[extra]:
        if req.startswith("openenv["):
            for name in req[len("openenv["):req.index("]")].split(","):
                seen |= _expand(name.strip())
    return seen


def test_standard_is_everything_but_training() -> None:
    assert _expand("standard") >= {"server", "docker", "gym", "mcp", "authoring", "hub", "tasks"}
    assert "train" not in _expand("standard")


def test_all_adds_training_and_dev_stays_without_it() -> None:
    assert _expand("all") >= _expand("standard") | {"train"}
    assert "train" not in _expand("dev")


def test_the_demo_installs_the_standard_extra() -> None:
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    assert "OPENENV_EXTRAS=${OPENENV_EXTRAS:-standard} bash scripts/setup.sh" in demo


def test_every_setup_part_that_installs_torch_is_marked_train() -> None:
    for part in sorted((ROOT / "scripts" / "setup.d").glob("*.sh")):
        text = part.read_text()
        if any(pkg in text for pkg in ("torch==", "trl>=", "tensorboard>=")):
            assert "\n# setup.d: train\n" in text, f"{part.name} installs the training stack unmarked"


def test_the_test_fixtures_are_marked_test_so_the_demo_skips_them() -> None:
    """.venv-mcp1, fastmcp in .venv and the third-party env in .cache are for the tests
    only (issue 28): scripts/test.sh (dev) makes them, scripts/demo.sh (standard) does not."""
    for name in ("40-mcp.sh", "50-fastmcp.sh", "55-pypi-env.sh"):
        text = (ROOT / "scripts" / "setup.d" / name).read_text()
        assert "\n# setup.d: test\n" in text, f"{name} makes a test fixture unmarked"
    for part in sorted((ROOT / "scripts" / "setup.d").glob("*.sh")):
        text = part.read_text()
        if ".venv-" in text or "--target" in text:  # another venv, or a package tree for tests
            assert "\n# setup.d: test\n" in text, f"{part.name} makes a test fixture unmarked"


@pytest.mark.parametrize(
    ("extras", "train_ran", "test_ran"),
    [("standard", False, False), ("all", True, False), ("dev", True, True)],
)
def test_setup_runs_the_training_parts_only_for_extras_with_training(
    tmp_path: Path, extras: str, train_ran: bool, test_ran: bool
) -> None:
    """scripts/setup.sh in a scratch tree whose .venv python is a stub (nothing installed)."""
    (tmp_path / "scripts" / "setup.d").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    parts = tmp_path / "scripts" / "setup.d"
    (parts / "10-plain.sh").write_text("#!/usr/bin/env bash\ntouch plain.ran\n")
    (parts / "40-train.sh").write_text("#!/usr/bin/env bash\n# setup.d: train\ntouch train.ran\n")
    (parts / "50-test.sh").write_text("#!/usr/bin/env bash\n# setup.d: test\ntouch test.ran\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "envs" / "e").mkdir(parents=True)
    (tmp_path / "envs" / "e" / "pyproject.toml").write_text("[project]\nname = 'e'\n")
    stub = tmp_path / ".venv" / "bin" / "python"
    stub.parent.mkdir(parents=True)
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    env = {**os.environ, "OPENENV_EXTRAS": extras}
    done = subprocess.run(["bash", "scripts/setup.sh"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "plain.ran").exists()
    assert (tmp_path / "train.ran").exists() is train_ran
    assert (tmp_path / "test.ran").exists() is test_ran


def _scratch_setup(
    tmp_path: Path, parts: dict[str, str], python: str = "exit 0\n"
) -> subprocess.CompletedProcess[str]:
    """scripts/setup.sh (dev extras) in a scratch tree with these setup.d parts and a stub
    .venv whose python runs ``python`` (a shell body; pip's calls too)."""
    (tmp_path / "scripts" / "setup.d").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    for name, body in parts.items():
        (tmp_path / "scripts" / "setup.d" / name).write_text(f"#!/usr/bin/env bash\n{body}")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "envs" / "e").mkdir(parents=True)
    (tmp_path / "envs" / "e" / "pyproject.toml").write_text("[project]\nname = 'e'\n")
    stub = tmp_path / ".venv" / "bin" / "python"
    stub.parent.mkdir(parents=True)
    stub.write_text(f"#!/bin/sh\n{python}")
    stub.chmod(0o755)
    env = {**os.environ, "OPENENV_EXTRAS": "dev"}
    return subprocess.run(["bash", "scripts/setup.sh"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)


def test_an_apart_part_runs_beside_the_others_and_its_failure_fails_setup(tmp_path: Path) -> None:
    """A part marked apart starts before the others and runs while they do: the ordered
    part 10 waits for a file that only the apart part 90 writes."""
    wait_for_apart = "for i in $(seq 200); do [ -e apart.ran ] && exit 0; sleep 0.05; done; exit 7\n"
    done = _scratch_setup(tmp_path / "ok", {
        "10-ordered.sh": wait_for_apart,
        "90-apart.sh": "# setup.d: apart\necho from-apart; touch apart.ran\n",
    })
    assert done.returncode == 0, done.stderr
    assert "from-apart" in done.stdout  # its output is shown when it ends
    failed = _scratch_setup(tmp_path / "bad", {"90-apart.sh": "# setup.d: apart\necho why >&2; exit 3\n"})
    assert failed.returncode == 1
    assert "why" in failed.stderr
    assert "a part that ran apart failed" in failed.stderr


def test_an_apart_part_runs_beside_the_main_install(tmp_path: Path) -> None:
    """Apart parts start before .venv's main install: here pip (the stub python) waits for
    a file only the apart part writes, and fails the install without it."""
    wait = "for i in $(seq 200); do [ -e apart.ran ] && exit 0; sleep 0.05; done; exit 7\n"
    done = _scratch_setup(tmp_path, {"90-apart.sh": "# setup.d: apart\ntouch apart.ran\n"}, python=wait)
    assert done.returncode == 0, done.stderr
