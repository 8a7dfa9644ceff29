"""``openenv init``: the generated package passes validate and its own tests as made."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from openenv.authoring import init_env, load_manifest, validate_path
from openenv.authoring._init import InitError, names_for

EXPECTED = [
    "Dockerfile",
    "README.md",
    "openenv.yaml",
    "pyproject.toml",
    "tests/test_word_guess_env.py",
    "word_guess/__init__.py",
    "word_guess/env.py",
    "word_guess/models.py",
]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return init_env("word-guess", tmp_path_factory.mktemp("init"))


def test_files_and_names(made: Path):
    assert made.name == "word_guess"
    assert sorted(p.relative_to(made).as_posix() for p in made.rglob("*") if p.is_file()) == EXPECTED
    text = "".join(p.read_text() for p in made.rglob("*") if p.is_file())
    assert "{{" not in text
    assert "__name__" not in text
    manifest = load_manifest(made)
    assert (manifest.name, manifest.env) == ("word_guess", "word_guess:WordGuessEnv")
    assert manifest.deterministic is True
    assert 'word_guess = "word_guess:WordGuessEnv"' in (made / "pyproject.toml").read_text()
    assert 'CMD ["openenv", "serve", "word_guess"]' in (made / "Dockerfile").read_text()


def test_generated_tests_pass(made: Path):
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=made, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "5 passed" in out.stdout


def test_generated_env_passes_validate(made: Path):
    report = validate_path(made)
    assert report.ok, report.render()
    assert report.failed() == []
    got = {c.name: c.outcome.value for c in report.checks}
    assert got["manifest"] == got["files"] == got["serve"] == got["determinism"] == "pass"


def test_generated_env_passes_every_level(made: Path):
    """The template declares a validation: block, and its game is one random guessing
    does not pass (0 to 999 in ten tries): no FAIL from STATIC to STATISTICAL."""
    from openenv.authoring._levels import run_validation
    from openenv.authoring._policy import CheckStatus, Level, Verdict

    report = run_validation(made, max_level=Level.STATISTICAL)
    assert report.verdict is not Verdict.FAIL, report.render()
    assert [r.check_id for r in report.results if r.status in (CheckStatus.FAIL, CheckStatus.ERROR)] == []
    assert report.manifest is not None
    assert report.manifest["reward"]["range"] == [0.0, 1.0]
    passed = ("static.manifest", "semantic.floor_gap", "statistical.headroom", "statistical.leaky_tasks")
    for check_id in passed:
        assert report.get(check_id).status is CheckStatus.PASS, check_id


def test_cli_init_then_validate(tmp_path: Path):
    out = subprocess.run([sys.executable, "-m", "openenv", "init", "dice", "--dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "dice")
    again = subprocess.run([sys.executable, "-m", "openenv", "init", "dice", "--dir", str(tmp_path)],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 2
    assert again.stderr.strip() == f"openenv init: {tmp_path / 'dice'} exists and is not empty"


def test_validate_folder_reports_missing_files(tmp_path: Path):
    made = init_env("broken", tmp_path)
    (made / "Dockerfile").unlink()
    (made / "openenv.yaml").write_text("name: Not An Identifier\n")
    report = validate_path(made)
    assert report.failed() == ["manifest"], report.render()
    assert report.get("files").outcome.value == "warn"
    assert "Dockerfile is missing" in report.get("files").details
    assert report.get("serve").outcome.value == "pass"  # the env itself still runs
    (made / "openenv.yaml").unlink()
    (made / "pyproject.toml").write_text('[project]\nname = "x"\n')
    report = validate_path(made)
    assert report.failed() == ["files", "serve"], report.render()
    assert report.get("manifest").outcome.value == "warn"


@pytest.mark.parametrize("bad", ["", "1abc", "class", "my env", "openenv", "Ünï"])
def test_bad_names_are_refused(bad: str, tmp_path: Path):
    with pytest.raises(InitError, match="not usable as an env name"):
        init_env(bad, tmp_path)


def test_names_for_keeps_env_suffix_once():
    names = names_for("maze_env")
    assert (names["Class"], names["Stem"], names["dist"]) == ("MazeEnv", "Maze", "openenv-maze-env")
