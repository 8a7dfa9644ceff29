"""``openenv validate --level statistical``: rewards over many tasks and seeds. A task
the null policy passes is named with its rewards and a fix (SEMANTIC, which plays
fewer tasks, misses it); a reward that changes with the seed is caught; echo passes."""

from __future__ import annotations

from openenv.authoring._levels import run_validation
from openenv.authoring._policy import CheckStatus, Level, Verdict, ids_up_to

from ._flawed import LEAKY, NOISY, make_env


def test_a_leaky_task_is_caught_with_its_evidence_and_a_fix(tmp_path):
    folder = make_env(tmp_path, LEAKY)
    report = run_validation(folder, max_level=Level.STATISTICAL, stat_tasks=5, seeds=2)
    reported = [r.check_id for r in report.results]
    assert sorted(reported + list(report.not_applicable)) == sorted(ids_up_to(Level.STATISTICAL))
    assert report.get("semantic.floor_gap").status is CheckStatus.PASS  # the first 3 tasks only
    leaky = report.get("statistical.leaky_tasks")
    assert leaky.status is CheckStatus.FAIL, report.render()
    assert leaky.evidence == [
        "task blank: the null policy (no answer, no action) scored 1, 1 over 2 seed(s), above the floor 0.9"
    ]
    assert leaky.remediation is not None
    assert leaky.remediation.startswith("task(s) blank pass without any work")
    assert leaky.measured["leaky"] == ["blank"]
    assert report.verdict is Verdict.FAIL
    headroom = report.get("statistical.headroom")  # random text rarely answers: room to learn
    assert headroom.status is CheckStatus.PASS, headroom.evidence
    assert headroom.measured["random"]["episodes"] == 10
    assert sum(headroom.measured["random"]["histogram"]) == 10
    assert report.get("statistical.variance_bound").status is CheckStatus.PASS
    # the oracle plays no text answers, and the manifest declares none: N/A, not a skip
    assert "statistical.reward_reachability" not in reported
    assert report.not_applicable["statistical.reward_reachability"].startswith("no capabilities.oracle")
    # a Task API the manifest does not declare is a false declaration
    tasks = report.get("runtime.task_declaration_accuracy")
    assert tasks.status is CheckStatus.FAIL
    assert tasks.evidence[0].startswith("serves a Task API the manifest does not declare")


def test_a_reward_that_changes_with_the_seed_is_caught(tmp_path):
    report = run_validation(make_env(tmp_path, NOISY), max_level=Level.STATISTICAL, stat_tasks=2, seeds=3)
    result = report.get("statistical.variance_bound")
    assert result.status is CheckStatus.FAIL, report.render()
    assert result.evidence[0].startswith("task seed-0: the null policy's same actions scored ")
    assert "under 3 seeds (sd " in result.evidence[0]
    assert result.remediation is not None
    assert "seed it from reset(seed=...)" in result.remediation
