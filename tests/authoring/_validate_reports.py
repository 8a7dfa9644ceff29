"""Reports of ``openenv validate --level semantic`` on our shipped envs, made once per
test process and shared by the tests that read them (the coding and terminal envs'
runs take seconds each)."""

from __future__ import annotations

import functools
from pathlib import Path

from openenv.authoring._levels import run_validation
from openenv.authoring._policy import Level
from openenv.authoring._vreport import ValidationReport

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def semantic_report(folder: Path) -> ValidationReport:
    """SEMANTIC on ``folder``: the policies play one task, the probes attack one, the
    oracle plays three (every task: bench/)."""
    return run_validation(folder, max_level=Level.SEMANTIC, tasks=1, probe_tasks=1, oracle_tasks=3)


@functools.cache
def every_level_report(folder: Path) -> ValidationReport:
    """Every level up to STATISTICAL (4 tasks, 2 seeds): for the envs that are quick to
    play (echo, arith); its ids include every SEMANTIC one."""
    return run_validation(folder, max_level=Level.STATISTICAL, stat_tasks=4, seeds=2)
