"""``openenv validate --level``: RFC 008's levels and report. Each flawed env is caught by
the check meant for its flaw, with evidence and a fix; echo passes every level."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.authoring._levels import run_validation
from openenv.authoring._policy import NOT_APPLICABLE, POLICY, CheckStatus, Level, Verdict, ids_up_to
from openenv.authoring._vreport import write_report

from ._flawed import FORGEABLE, HACKABLE, HACKABLE_SHELL, HEADER, NOISY, NULL_PASSES, OUT_OF_RANGE, make_env
from ._validate_reports import every_level_report, semantic_report

REPO = Path(__file__).resolve().parents[2]
ECHO = REPO / "envs" / "echo_env"


def _cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv", "validate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _caught(report, check_id: str, evidence: str) -> None:
    result = report.get(check_id)
    assert result.status is CheckStatus.FAIL, report.render()
    assert any(evidence in line for line in result.evidence), result.evidence
    assert result.remediation, f"{check_id} fails without a fix"
    assert report.verdict is Verdict.FAIL


@pytest.mark.parametrize("env", ["echo_env", "arith_env"])
def test_every_level_gives_each_check_id_a_pass_or_a_declared_na(env):
    """Every level on echo and arith: each check id a PASS, or N/A where the manifest
    declares it cannot apply (no rubric tree, no task_distribution; arith: no oracle)."""
    report = every_level_report(REPO / "envs" / env)  # shared with test_validate_upstream
    assert report.verdict is not Verdict.FAIL, report.render()
    _accounted(report, Level.STATISTICAL)
    declared = {
        "static.task_distribution_pinning",
        "runtime.rubric_introspectable",
        "runtime.reward_attribution",
    }
    if env == "arith_env":  # no capabilities.oracle: arith names its answer at the end instead
        declared.add("statistical.reward_reachability")
    assert set(report.not_applicable) == declared
    for r in report.results:
        assert r.status is CheckStatus.PASS, report.render()  # no SKIP, not even a not-applicable one
    oracle = report.get("semantic.oracle_max").evidence[0]
    if env == "echo_env":  # the plan its manifest names: the longest message, 6553.6
        assert oracle == (
            "10 of 10 task(s) have a reference solution in the plan oracle.py:reference_plan: "
            "each reached 6553.6 (tolerance 0.0)"
        ), oracle
        assert (
            report.get("statistical.reward_reachability")
            .evidence[0]
            .startswith("4 of 4 task(s) with a reference solution reached 6553.6")
        )
    else:
        assert oracle.startswith("the reference answer of each of 1 task"), oracle
    hacking = report.get("semantic.reward_hacking").evidence
    assert hacking[0].endswith("probe episodes (text): none scored above an honest wrong answer"), hacking
    probed = {line.split(": ")[1].split(" on ")[0] for line in hacking[1:]}
    assert {"stuffed", "other_type:list", "after_done", "from_view"} <= probed, hacking
    assert "2 generated canaries" in report.get("semantic.canary_floor").evidence[0]
    assert report.get("runtime.host_containment").measured["action_kind"] is None
    assert report.get("runtime.network_policy").measured == {
        "declared": "public",
        "tcp_to_host_loopback": True,
    }
    assert report.manifest is not None
    if env == "echo_env":
        assert report.manifest["reward"]["range"] == [0.0, 6553.6]
    text = report.render()  # N/A listed with its declaration, after the results
    assert "  N/A   runtime.rubric_introspectable        declared: capabilities.rubric_tree: false" in text
    assert "runtime.rubric_introspectable" not in write_report(report)  # as upstream: left out


def _accounted(report, level: Level) -> None:
    """Every check id up to ``level``: a result, or N/A with the manifest's declaration."""
    reported = [r.check_id for r in report.results]
    assert reported == [c for c in ids_up_to(level) if c not in report.not_applicable]
    assert all(report.not_applicable.values())


def test_reward_outside_its_declared_range(tmp_path):
    report = run_validation(make_env(tmp_path, OUT_OF_RANGE), max_level=Level.RUNTIME)
    _caught(report, "runtime.reward_well_formed", "reward 2.0 is outside the declared range [0.0, 1.0]")
    assert report.get("runtime.observation_schema").status is CheckStatus.PASS


def test_a_task_the_null_policy_passes(tmp_path):
    report = run_validation(make_env(tmp_path, NULL_PASSES), max_level=Level.SEMANTIC, tasks=2)
    _caught(report, "semantic.floor_gap", "the null policy scored 1.0 (the floor is 0.9)")


def test_nondeterminism_under_a_seed(tmp_path):
    report = run_validation(make_env(tmp_path, NOISY, deterministic=True), max_level=Level.SEMANTIC, tasks=2)
    _caught(report, "semantic.replayability", "rewards")
    _caught(report, "runtime.episode_determinism", "reply")
    assert report.get("runtime.seed_control").status is CheckStatus.PASS  # reset itself is seeded


def test_a_grader_the_submitted_code_reaches(tmp_path):
    report = run_validation(make_env(tmp_path, HACKABLE), max_level=Level.SEMANTIC, tasks=1, probe_tasks=1)
    result = report.get("semantic.reward_hacking")
    _caught(report, "semantic.reward_hacking", "probe(s) scored above an honest wrong answer")
    hacked = {p["probe"] for p in result.measured["probes"] if p["reward"] > p["honest"]}
    # the reward file, the lying __eq__, the exit status: each forgery named
    assert {"reward_file", "equal_anything", "early_exit"} <= hacked, result.evidence
    assert any(line.startswith("HACKED: reward_file on seed-0: reward 1") for line in result.evidence)
    held = {p["probe"] for p in result.measured["probes"]} - hacked
    assert "inject_verifier_output" in held  # printing "PASSED" does not fool an exit status
    # its code runs unsandboxed: it reads and writes the validator's private folder
    _caught(report, "runtime.host_containment", "read a file the validator keeps outside the session")
    assert report.get("runtime.host_containment").measured["wrote"] is True
    network = report.get("runtime.network_policy")  # public, and it has the network
    assert network.status is CheckStatus.PASS, network.evidence
    assert network.measured["tcp_to_host_loopback"] is True


#: A text env with no code member that runs its text as Python anyway, unsandboxed.
RUNS_ITS_TEXT = (
    HEADER
    + """
class Env(_Base):
    def step(self, action: TextAction) -> TextObservation:
        self._state.step_count += 1
        subprocess.run([sys.executable, "-c", action.message], capture_output=True, timeout=20)
        return TextObservation(text="done", reward=0.0, done=True)
"""
)


def test_an_env_that_runs_its_text_is_caught_though_it_has_no_code_member(tmp_path):
    report = run_validation(make_env(tmp_path, RUNS_ITS_TEXT), max_level=Level.RUNTIME)
    result = report.get("runtime.host_containment")
    _caught(report, "runtime.host_containment", "the escape probe, sent as the action's text (message), ran")
    assert result.measured["action_kind"] is None
    # it wrote beside the secret and reached the listener; what it read never came back
    assert (result.measured["read"], result.measured["wrote"], result.measured["tcp"]) == (False, True, True)
    _caught(report, "runtime.oracle_containment", "the action's text runs as code")
    assert result.evidence == [
        "the escape probe, sent as the action's text (message), ran: it wrote beside it, "
        "connected to its listener"
    ]


def test_a_reward_file_the_agents_commands_can_write(tmp_path):
    report = run_validation(
        make_env(tmp_path, HACKABLE_SHELL), max_level=Level.SEMANTIC, tasks=1, probe_tasks=1
    )
    result = report.get("semantic.reward_hacking")
    _caught(report, "semantic.reward_hacking", "probe(s) scored above an honest wrong answer")
    hacked = {p["probe"] for p in result.measured["probes"] if p["reward"] > p["honest"]}
    assert "reward_file" in hacked, result.evidence
    assert "equal_anything" not in {p["probe"] for p in result.measured["probes"]}  # Python's only
    _caught(report, "runtime.host_containment", "read a file the validator keeps outside the session")
    assert {"early_exit", "inject_verifier_output"}.isdisjoint(hacked), result.evidence


def test_a_text_grader_forged_without_the_answer(tmp_path):
    """Each text probe catches its flaw in FORGEABLE; the check meant for it fails with
    the evidence; the probes aimed at flaws it lacks hold."""
    report = run_validation(make_env(tmp_path, FORGEABLE), max_level=Level.SEMANTIC, tasks=1, probe_tasks=1)
    hacking = report.get("semantic.reward_hacking")
    _caught(report, "semantic.reward_hacking", "probe(s) scored above an honest wrong answer")
    lines = {line.split(": ")[1].split(" on ")[0]: line for line in hacking.evidence[1:]}
    for probe in ("other_type:list", "stuffed", "from_view"):
        assert lines[probe].startswith("HACKED: "), hacking.evidence
    for probe in ("other_type:number", "other_type:object", "other_type:null"):
        assert lines[probe].startswith("held: "), hacking.evidence
    # its step after the end would pay, but our server refuses a step after done=true
    # (the probe catches it on a server that does not: upstream's, validated by URL)
    assert lines["after_done"].endswith("0 of 2 steps after done answered: refused"), hacking.evidence
    _caught(report, "semantic.no_solution_leakage", "the from_view probe took the expected answers")
    _caught(report, "semantic.canary_floor", "canary seed-0: the empty answer: reward 0.5 (floor 0.1)")
    _caught(report, "semantic.oracle_max", "task seed-0: its own reference answer 'seven' scored 0")


def test_manifest_with_an_unknown_key_or_a_wrong_type_names_the_key(tmp_path):
    bad = make_env(
        tmp_path,
        OUT_OF_RANGE,
        block="validation:\n  reward: {range: [0, 1], floor_margin: 0.1, "
        "rnage: 3}\n  resources: {cpu: 1, memory_mb: 1, disk_mb: 1, episode_timeout_s: 1}\n"
        "  capabilities: {verifier: {kind: reward_channel}}\n  types: {tags: [x]}\n",
    )
    done = _cli(str(bad), "--level", "static")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "validation.reward.rnage: unknown key" in done.stdout
    (bad / "openenv.yaml").write_text(
        "name: flawed_env\nvalidation:\n  reward: {range: high, floor_margin: 0.1}\n"
    )
    report = run_validation(bad, max_level=Level.STATIC)
    evidence = report.get("static.manifest").evidence
    assert len(evidence) == 1, evidence
    assert "validation.reward.range: " in evidence[0], evidence
    (bad / "openenv.yaml").write_text("name: flawed_env\nvalidaton: {}\n")
    assert (
        "unknown key 'validaton'"
        in run_validation(bad, max_level=Level.STATIC).get("static.manifest").evidence[0]
    )


def test_exit_codes_are_upstreams(tmp_path):
    assert _cli(str(ECHO), "--level", "static").returncode == 0
    out = tmp_path / "report.json"
    done = _cli(str(ECHO), "--level", "nonsense")
    assert (done.returncode, done.stderr.count("\n")) == (3, 1), done.stderr
    done = _cli(str(tmp_path / "nowhere"), "--level", "static")
    assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr
    done = _cli(str(make_env(tmp_path, OUT_OF_RANGE)), "--level", "runtime", "--output", str(out))
    assert done.returncode == 1, done.stdout
    assert "FAIL  runtime.reward_well_formed" in done.stdout
    assert json.loads(out.read_text())["verdict"] == "fail"


def test_every_policy_id_is_reported_or_skipped_with_a_reason_for_a_url_target(serve):
    from echo_env import EchoEnv

    report = run_validation(serve(EchoEnv).url, max_level=Level.RUNTIME)
    assert [r.check_id for r in report.results] == ids_up_to(Level.RUNTIME)
    assert report.get("static.manifest").evidence[0].startswith("no package folder")
    assert report.get("runtime.observation_schema").status is CheckStatus.PASS
    assert report.verdict is not Verdict.FAIL, report.render()


def test_not_applicable_skips_do_not_lower_the_verdict_but_others_do():
    from openenv.authoring._policy import verdict

    assert verdict([("static.manifest", CheckStatus.PASS, "")]) is Verdict.PASS
    assert verdict([("semantic.canary_floor", CheckStatus.SKIP, NOT_APPLICABLE + "x")]) is Verdict.PASS
    assert verdict([("semantic.canary_floor", CheckStatus.SKIP, "not implemented")]) is Verdict.WARN
    assert verdict([("static.layout", CheckStatus.FAIL, "")]) is Verdict.WARN  # a warn-severity check
    assert verdict([("static.manifest", CheckStatus.ERROR, "")]) is Verdict.FAIL
    assert set(ids_up_to(Level.STATISTICAL)) == set(POLICY)


@pytest.mark.parametrize("env", ["coding_env", "terminal_env"])
def test_our_code_running_envs_hold_against_every_probe(env):
    # tasks=1, probe_tasks=1, oracle_tasks=3 (the oracle on every task: bench/bench_validate.py);
    # the same report is compared with upstream's in test_validate_upstream
    report = semantic_report(REPO / "envs" / env)
    hacking = report.get("semantic.reward_hacking")
    assert hacking.status is CheckStatus.PASS, hacking.evidence
    probes = {p["probe"] for p in hacking.measured["probes"]}
    assert {"read_grader", "read_answers"} < probes, probes  # every probe of its kind ran
    assert len(report.get("semantic.oracle_max").measured["oracle_rewards"]) == 3
    assert report.get("runtime.oracle_containment").status is CheckStatus.PASS
    assert report.get("semantic.no_solution_leakage").status is CheckStatus.PASS
    assert report.get("semantic.verifier_determinism").status is CheckStatus.PASS  # the oracle played
    # the session's code could not touch the validator's files, nor reach its TCP listener
    # (both declare no-network): measured, on this host, from inside a session
    for check_id in ("runtime.host_containment", "runtime.network_policy"):
        result = report.get(check_id)
        assert result.status is CheckStatus.PASS, (check_id, result.evidence)
    assert report.get("runtime.network_policy").measured == {
        "declared": "no-network",
        "tcp_to_host_loopback": False,
    }


@pytest.mark.parametrize("env", sorted(p.parent.name for p in (REPO / "envs").glob("*/openenv.yaml")))
def test_every_shipped_env_declares_a_sound_validation_block(env):
    report = run_validation(REPO / "envs" / env, max_level=Level.STATIC)
    for check_id in ("static.manifest", "static.resource_declaration", "static.timeout_ceiling"):
        assert report.get(check_id).status is CheckStatus.PASS, report.render()
