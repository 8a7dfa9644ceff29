"""``examples/gym_cartpole.py`` runs and prints what its docs page shows."""

from __future__ import annotations

import pytest

from .._examples import run_example


@pytest.mark.timeout(120)
def test_example_runs():
    out = run_example("gym_cartpole.py")
    assert "check_env passed" in out
    assert "episode return served 500, in-process 500" in out
    assert "8 sessions" in out
