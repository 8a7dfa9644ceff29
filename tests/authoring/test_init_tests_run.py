"""`openenv init` makes a package whose own tests run as docs/authoring.md says,
`python -m pytest envs/maze/tests` from the folder above, without installing it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from openenv.cli import main


def test_the_new_envs_tests_pass_uninstalled(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "maze", "--dir", "envs"]) == 0
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "envs/maze/tests"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    assert " passed" in done.stdout
