"""``openenv validate --level`` against upstream OpenEnv 0.10's: the same check ids, the
same report schema, the same manifest accepted by both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.authoring._levels import run_validation
from openenv.authoring._policy import POLICY, Level

REPO = Path(__file__).resolve().parents[2]
UPSTREAM_PY = REPO / ".venv-upstream" / "bin" / "python"
UPSTREAM_PKG = REPO / ".venv-upstream" / "lib" / "python3.11" / "site-packages" / "openenv" / "validation"
ECHO = REPO / "envs" / "echo_env"

pytestmark = pytest.mark.upstream


def _need_upstream() -> None:
    if not (UPSTREAM_PY.is_file() and UPSTREAM_PKG.is_dir()):
        pytest.skip(
            f"upstream OpenEnv 0.10 is not installed: {UPSTREAM_PKG} is missing (see scripts/test.sh)"
        )


def _upstream_local_ids() -> set[str]:
    """Every local-lane check id of every severity policy upstream ships."""
    ids: set[str] = set()
    for path in sorted((UPSTREAM_PKG / "policies").glob("severity-*.json")):
        ids |= {e["check_id"] for e in json.loads(path.read_text())["entries"] if e["lane"] == "local"}
    return ids


def test_our_policy_has_every_local_check_id_upstream_ships():
    _need_upstream()
    ids = _upstream_local_ids()
    assert len(ids) >= 30
    assert sorted(ids - set(POLICY)) == []


def _upstream_validate(folder: Path) -> dict:
    # From / with -I, so this checkout's ./openenv does not shadow upstream's package.
    code = (
        "import sys; from openenv.cli.__main__ import main; "
        f"sys.argv = ['openenv', 'validate', {str(folder)!r}, "
        "'--level', 'semantic', '--skip-build', '--json']; "
        "main()"
    )
    done = subprocess.run(
        [str(UPSTREAM_PY), "-I", "-c", code], cwd="/", capture_output=True, text=True, timeout=300
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_same_env_folder_under_both_tools():
    _need_upstream()
    theirs = _upstream_validate(ECHO)
    ours = run_validation(ECHO, max_level=Level.SEMANTIC)
    # upstream parses the validation: block ours reads: its static.manifest passes too
    assert {r["check_id"]: r["status"] for r in theirs["results"]}["static.manifest"] == "pass"
    missing = {r["check_id"] for r in theirs["results"]} - {r.check_id for r in ours.results}
    assert sorted(missing) == []
    # where upstream skips for want of a build ("not implemented", "--skip-build"), ours ran the check
    skipped = {r["check_id"] for r in theirs["results"] if r["status"] == "skip"}
    ran = {r.check_id for r in ours.results if r.status.value == "pass"}
    assert len(skipped & ran) >= 8, sorted(skipped & ran)
    assert ours.manifest == theirs["manifest"]


def test_our_report_fits_upstreams_report_schema():
    _need_upstream()
    from jsonschema import Draft202012Validator

    schema = json.loads((UPSTREAM_PKG / "schemas" / "report-v2.schema.json").read_text())
    report = json.loads(run_validation(ECHO, max_level=Level.RUNTIME).model_dump_json())
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in Draft202012Validator(schema).iter_errors(report)
    ]
    assert errors == []


def test_a_manifest_with_an_unknown_key_fails_in_both(tmp_path):
    _need_upstream()
    folder = tmp_path / "env"
    folder.mkdir()
    text = (
        (ECHO / "openenv.yaml")
        .read_text()
        .replace("    floor_margin: 0.1", "    floor_margin: 0.1\n    flor: 1")
    )
    (folder / "openenv.yaml").write_text(text)
    theirs = {r["check_id"]: r for r in _upstream_validate(folder)["results"]}
    ours = run_validation(folder, max_level=Level.STATIC).get("static.manifest")
    assert theirs["static.manifest"]["status"] == ours.status.value == "fail"
    assert any("flor" in line for line in theirs["static.manifest"]["evidence"])
    assert "validation.reward.flor: unknown key" in ours.evidence[0]


def test_upstream_cli_is_run_from_its_own_package():
    _need_upstream()
    done = subprocess.run(
        [str(UPSTREAM_PY), "-I", "-c", "import openenv; print(openenv.__file__)"],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ".venv-upstream" in done.stdout, done.stdout + done.stderr
    assert sys.executable != str(UPSTREAM_PY)
