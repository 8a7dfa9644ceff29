"""A verifiers taskset served as our env (``openenv serve verifiers:MODULE``), driven by our
client, with the rewards verifiers computes for the same completions; ``openenv import``
then ``openenv validate`` on the written folder; the bad inputs, one line and exit 2.

verifiers is not one of our dependencies: everything here runs in the verifiers side
venv (``.cache/verifiers-venv``, made by ``scripts/side_venvs.sh verifiers``, which
installs this package editable there). The taskset is ``verifiers_side/qa_taskset.py``
(an in-memory ``datasets.Dataset``, rewards with weights 1, 0.5 and -0.25): no network,
no hub. Cost: one server and one driver process, started together, and the server that
``openenv validate`` starts for the written folder.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._served import stop_child

REPO = Path(__file__).resolve().parents[2]
SIDE = Path(__file__).resolve().parent / "verifiers_side"
VENV = Path(os.environ.get("OPENENV_VERIFIERS_VENV") or REPO / ".cache" / "verifiers-venv")
STAMP = VENV / "openenv-verifiers-ready"  # written by side_venvs.sh after a complete install


def verifiers_python() -> Path:
    """The side venv's interpreter, made by scripts/side_venvs.sh if scripts/test.sh has not
    made it already; skips (with pip's last line) when pip cannot install verifiers."""
    if not STAMP.exists():
        done = subprocess.run(["bash", str(REPO / "scripts" / "side_venvs.sh"), "verifiers"],
                              capture_output=True, text=True, timeout=1500,
                              env={**os.environ, "OPENENV_VERIFIERS_VENV": str(VENV)})
        if done.returncode != 0 or not STAMP.exists():
            lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            pytest.skip(f"cannot install verifiers into {VENV}: {lines[-1] if lines else done.returncode}")
    return VENV / "bin" / "python"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The server and the driver (``verifiers_side/drive.py``), started together; the
    driver's JSON report."""
    python = verifiers_python()
    work = tmp_path_factory.mktemp("verifiers")
    url = f"http://127.0.0.1:{_free_port()}"
    env = {**os.environ, "PYTHONPATH": str(SIDE)}
    log = work / "server.log"
    server = subprocess.Popen(
        [str(python), "-m", "openenv", "serve", "verifiers:qa_taskset", "--host", "127.0.0.1",
         "--port", url.rsplit(":", 1)[1], "--no-web"],
        cwd=work, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        done = subprocess.run([str(python), str(SIDE / "drive.py"), url, str(work / "qa_env")],
                              cwd=work, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-4000:] + "\nserver:\n" + log.read_text()[-3000:]
        yield json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        stop_child(server, 15, group=True)


@pytest.mark.timeout(1800)  # the first run may install verifiers; later ones reuse the venv
def test_rewards_over_the_wire_equal_what_verifiers_computes(run: dict[str, Any]) -> None:
    ours, theirs = run["plays"], run["verifiers"]
    assert [p["reward"] for p in ours] == [t["reward"] for t in theirs]
    assert [p["rewards"] for p in ours] == [t["rewards"] for t in theirs]
    assert [p["metrics"] for p in ours] == [t["metrics"] for t in theirs]
    # and those are the rubric's numbers: exact 1, mentions 0.5, verbose -0.25 (a reply over
    # 10 characters); verifiers strips the reply, so "  5  " is exact
    assert [p["reward"] for p in ours] == [1.5, 1.5, 0.25, 0.0]
    assert ours[2]["rewards"] == {
        "exact": {"score": 0.0, "weight": 1.0},
        "mentions": {"score": 1.0, "weight": 0.5},
        "verbose": {"score": 1.0, "weight": -0.25},
    }
    assert all(p["done"] and p["metrics"] == {"turns": 1.0} for p in ours)


@pytest.mark.timeout(1800)
def test_reset_shows_the_tasks_prompt_and_the_seed_picks_the_task(run: dict[str, Any]) -> None:
    cap = run["plays"][2]
    assert cap["task_id"] == "cap"
    assert cap["messages"] == [{"role": "system", "content": "Reply with the answer only."},
                               {"role": "user", "content": "What is the capital of France?"}]
    assert cap["prompt"] == "Reply with the answer only.\n\nWhat is the capital of France?"
    first, again = run["seeded"]
    assert first == again
    assert first in {"add", "cap", "sq"}
    # the Task API lists the taskset's tasks, never a reference answer
    assert [t["id"] for t in run["tasks"]] == ["add", "cap", "sq"]
    assert all(set(t["data"]) == {"id", "name", "description", "prompt"} for t in run["tasks"])


@pytest.mark.timeout(1800)
def test_import_writes_a_package_that_validate_accepts(run: dict[str, Any]) -> None:
    assert run["import"]["rc"] == 0, run["import"]["err"]
    assert "next: openenv validate" in run["import"]["out"]
    assert run["validate"]["ok"], run["validate"]["text"]
    assert "PASS  tasks" in run["validate"]["text"]  # the Task API over the taskset's tasks
    # --split NAME=CONFIG: each split is the taskset loaded with that config
    assert run["imported_splits"] == {"train": ["add", "cap", "sq"], "test": ["cube"]}


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("case", "words"), [
    ("import_unknown", "no module named 'no_such_taskset_module'"),
    ("import_old_style", "exports no vf.Taskset subclass in __all__ (it has load_environment()"),
    ("import_taken", "exists and is not an empty folder"),
    ("import_bad_field", "taskset 'qa_taskset' config nope: Extra inputs are not permitted"),
    ("import_failing_load", "taskset 'qa_taskset' failed to load its tasks: KeyError: 'dev'"),
    ("serve_unknown", "no module named 'no_such_taskset_module'"),
    ("serve_old_style", "exports no vf.Taskset subclass"),
    ("serve_needs_runtime", "task RuntimeTask scores with reward tests_pass(), which needs a runtime"),
])
def test_bad_input_is_one_line_and_exit_2(run: dict[str, Any], case: str, words: str) -> None:
    got = run["bad"][case]
    assert got["rc"] == 2, got
    assert got["err"].count("\n") == 1, got["err"]
    assert words in got["err"]
    assert "Traceback" not in got["err"]


def test_without_verifiers_the_command_names_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        import verifiers.v1  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("verifiers is installed in this venv: the missing-extra line cannot show")
    from openenv.cli import main

    assert main(["import", "some_taskset", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == ("openenv import: openenv.verifiers needs the 'verifiers' extra (missing module "
                   "'verifiers'): pip install 'openenv[verifiers]'\n")
    assert not (tmp_path / "out").exists()
    assert sys.modules.get("verifiers") is None
