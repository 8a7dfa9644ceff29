"""The SEMANTIC level: the oracle on every task's reference solution, a second server
process grading the same actions, the shipped canaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv._exceptions import ProbeError
from openenv.authoring import _play, _semantic
from openenv.authoring._checks import Context
from openenv.authoring._levels import run_validation
from openenv.authoring._policy import CheckStatus, Level, Verdict, ids_up_to
from openenv.authoring._report import Report
from openenv.authoring._semantic_replay import read_canaries
from openenv.authoring._validate import serve_process

from ._flawed import BLOCK, CODE_HEADER, HEADER, make_env
from ._validate_reports import semantic_report

REPO = Path(__file__).resolve().parents[2]

#: A coding env of seven tasks; six ship a reference solution, and the fifth one's is
#: wrong (it doubles where the task triples); the seventh cannot be reset. The grader
#: runs the submission in a child and compares the value it prints.
WRONG_ORACLE = (
    CODE_HEADER
    + """
def row(i, k, solution_k):
    name = f"times{k}"
    solution = f"def {name}(x):\\n    return x * {solution_k}\\n" if solution_k else None
    return {"id": f"t{i}", "entry_point": name, "k": k, "prompt": f"write {name}(x)", "solution": solution}


ROWS = [row(1, 2, 2), row(2, 3, 3), row(3, 4, 4), row(4, 5, 5), row(5, 3, 2), row(6, 7, None), row(7, 8, 8)]


class Env(TaskCodeEnv):
    task_set = RowTasks("times", [{k: v for k, v in r.items() if v is not None} for r in ROWS])

    def reset(self, *, seed=None, episode_id=None, options=None) -> CodeObservation:
        shown = super().reset(seed=seed, episode_id=episode_id, options=options)
        if self._task["id"] == "t7":
            raise ValueError("task t7 needs a config this server lacks")
        return shown

    def step(self, action: CodeAction) -> CodeObservation:
        self._state.step_count += 1
        if not action.submit:
            return CodeObservation(output="submit to grade", reward=0.0)
        call = f"{self._task['entry_point']}(6)"
        done = subprocess.run([sys.executable, "-c", action.code + f"\\nprint(repr({call}))"],
                              capture_output=True, text=True, timeout=30)
        try:
            got = ast.literal_eval(done.stdout.strip().splitlines()[-1])
        except Exception:
            got = None
        ok = type(got) is int and got == 6 * self._task["k"]
        return CodeObservation(output=done.stdout[-300:], reward=1.0 if ok else 0.0, done=True)
"""
)


def test_the_oracle_plays_every_task_and_a_wrong_reference_solution_fails(tmp_path):
    report = run_validation(
        make_env(tmp_path, WRONG_ORACLE), max_level=Level.SEMANTIC, tasks=1, probe_tasks=0
    )
    oracle = report.get("semantic.oracle_max")
    assert oracle.status is CheckStatus.FAIL, report.render()
    assert oracle.evidence[0] == "task t5: the reference solution scored 0.0 (done)"
    assert oracle.evidence[1].startswith("task t7 could not be played: "), oracle.evidence
    assert len(oracle.evidence) == 2, oracle.evidence
    assert "reference solution" in (oracle.remediation or "")
    # every task with a solution was played (t6 has none, t7 no reset), past the 1 the
    # other policies play
    assert oracle.measured["oracle_rewards"] == {"t1": 1.0, "t2": 1.0, "t3": 1.0, "t4": 1.0, "t5": 0.0}
    assert report.get("semantic.verifier_determinism").status is CheckStatus.PASS  # t1, graded twice
    hacking = report.get("semantic.reward_hacking")
    assert (hacking.status, hacking.evidence) == (CheckStatus.SKIP, ["not run: probe_tasks is 0"])
    assert report.verdict is Verdict.FAIL


#: A text env whose grader draws a salt per process (same reward for the same message in
#: one process, another in the next), and lets one known phrase through.
SALTED = (
    HEADER
    + """
SALT = random.SystemRandom().random()


class Env(_Base):
    def step(self, action: TextAction) -> TextObservation:
        self._state.step_count += 1
        if action.message == "let me in":
            return TextObservation(text="welcome", reward=1.0, done=True)
        if action.message.startswith("please"):
            return TextObservation(text="no", reward=0.0, done=True)
        return TextObservation(text="graded", reward=round(0.2 + SALT * 0.5, 6), done=True)
"""
)

CANARIES = [
    {"name": "polite", "reset": {"seed": 1}, "actions": [{"message": "please, full marks"}]},
    {"name": "open sesame", "reset": {}, "actions": [{"message": "let me in"}]},
]


def test_a_grader_salted_per_process_and_a_canary_above_the_floor(tmp_path):
    block = BLOCK.replace(
        "      kind: reward_channel\n", "      kind: reward_channel\n    canaries: canaries.jsonl\n"
    )
    folder = make_env(tmp_path, SALTED, block=block)
    (folder / "canaries.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CANARIES))
    report = run_validation(folder, max_level=Level.SEMANTIC, tasks=2)
    # one process grades the same actions the same way; a second process does not
    assert report.get("semantic.replayability").status is CheckStatus.PASS
    assert report.get("semantic.verifier_determinism").status is CheckStatus.PASS
    portability = report.get("semantic.verifier_portability")
    assert portability.status is CheckStatus.FAIL, portability.evidence
    assert "on the first server" in portability.evidence[0]
    assert "on the second" in portability.evidence[0]
    assert portability.remediation
    canary = report.get("semantic.canary_floor")
    assert canary.status is CheckStatus.FAIL, canary.evidence
    assert canary.evidence == [
        "canary open sesame: reward 1 (floor 0.1)",
        "canary polite: reward 0 (floor 0.1)",
    ]
    assert "canaries.jsonl" in (canary.remediation or "")
    assert report.verdict is Verdict.FAIL


def test_a_canary_file_that_is_not_json_lines_is_named(tmp_path):
    block = BLOCK.replace(
        "      kind: reward_channel\n", "      kind: reward_channel\n    canaries: canaries.jsonl\n"
    )
    folder = make_env(tmp_path, SALTED, block=block)
    (folder / "canaries.jsonl").write_text('{"name": "x", "actions": []}\n')
    with pytest.raises(ProbeError, match=r"canaries.jsonl line 1: needs 'actions' \(a non-empty list\)"):
        read_canaries(folder / "canaries.jsonl")


@pytest.mark.parametrize("env", ["coding_env", "terminal_env"])
def test_our_code_running_envs_pass_every_semantic_check(env):
    report = semantic_report(REPO / "envs" / env)  # shared with test_validate_levels
    for check_id in ids_up_to(Level.SEMANTIC):
        if check_id.startswith("semantic."):
            result = report.get(check_id)
            assert result.status is CheckStatus.PASS, (check_id, result.evidence)
    oracle = report.get("semantic.oracle_max").evidence[0]
    assert oracle.startswith("3 of 3 task(s) ship a reference solution: each reached 1.0"), oracle
    assert (
        "oracle episode(s) graded by a second server"
        in report.get("semantic.verifier_portability").evidence[0]
    )
    canary = report.get("semantic.canary_floor")
    shipped = {"coding_env": 3, "terminal_env": 8}[env]  # each ships canaries.jsonl
    assert canary.status is CheckStatus.PASS, canary.evidence
    expected = f"{shipped} declared canaries ended at or below the floor 0.1"
    assert canary.evidence[0] == expected, canary.evidence


def test_the_oracle_stops_starting_tasks_when_its_budget_is_spent(tmp_path, monkeypatch):
    monkeypatch.setattr(_semantic, "ORACLE_BUDGET_S", 0.0)
    monkeypatch.setattr(_semantic, "_ORACLE_CHUNK", 2)
    with serve_process(make_env(tmp_path, WRONG_ORACLE)) as (url, _):
        played, left, listed = _semantic._play_oracle(Context(url=url, report=Report(url)), None, 3, 30.0)
    # a chunk (played at once: in the order they end), then no more
    assert (sorted(t.task_id for t in played), left, listed) == (["t1", "t2"], 4, 7)


#: A text env that serves one session at a time (upstream's template serves one).
ONE_SESSION = (
    HEADER
    + """
class Env(_Base):
    max_sessions = 1

    def step(self, action: TextAction) -> TextObservation:
        self._state.step_count += 1
        return TextObservation(text="graded", reward=0.0, done=True)
"""
)


def test_the_policies_keep_within_the_servers_session_limit(tmp_path, monkeypatch):
    """Four episodes at a concurrency of 4 on a server of one session: the limit it
    serves at GET /sessions is kept; where a server does not say (upstream's), the
    episodes it refused for capacity are played again one at a time."""
    with serve_process(make_env(tmp_path, ONE_SESSION)) as (url, _):
        assert _play.free_sessions(url) == 1
        played = _play.play(url, "random", count=4, concurrency=4)
        assert [(t.status, t.error) for t in played] == [("done", None)] * 4
        monkeypatch.setattr(_play, "free_sessions", lambda *a: None)
        played = _play.play(url, "random", count=4, concurrency=4)
        assert [(t.status, t.error) for t in played] == [("done", None)] * 4
