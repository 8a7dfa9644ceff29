"""``examples/rewards_polite_echo.py`` runs and prints what its docs page shows."""

from __future__ import annotations

import pytest

from .._examples import run_example


@pytest.mark.timeout(120)
def test_example_runs():
    out = run_example("rewards_polite_echo.py")
    assert "please help" in out
    assert "brevity=" in out
    assert "episode=3.00" in out
