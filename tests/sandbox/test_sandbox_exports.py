"""``openenv.sandbox`` exports a sorted ``__all__`` that matches its public names."""

from __future__ import annotations

import openenv.sandbox as sandbox
from tests.test_exported_members import isort_key, public_names


def test_all_is_sorted_and_complete() -> None:
    assert sandbox.__all__ == sorted(sandbox.__all__, key=isort_key)
    assert set(sandbox.__all__) == public_names(sandbox)


def test_importing_openenv_does_not_load_the_sandbox() -> None:
    import subprocess
    import sys

    code = "import sys, openenv; print('openenv.sandbox' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "False"
