"""``examples/tasks_quiz.py`` runs and prints what its docs page shows."""

from __future__ import annotations

import pytest

from .._examples import run_example


@pytest.mark.timeout(120)
def test_example_runs():
    out = run_example("tasks_quiz.py")
    assert "by seed:  train-0 then train-0" in out
    assert "TASK_NOT_FOUND" in out
    assert "'id': 'test-0'" in out
