"""The shipped problems and the grader: every reference solution scores 1.0, an empty
or wrong answer less; hidden tests run in a fresh sandbox, with a per-test breakdown."""

from __future__ import annotations

import importlib.util
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from _coding_fixtures import ENV_DIR, PROBLEMS, run, runtime
from coding_env import CodeAction
from coding_env.env import CodingEnv

ROWS = [json.loads(line) for line in PROBLEMS.read_text().splitlines()]


@pytest.fixture(scope="module")
def rt():
    with runtime("auto", pool_size=1, test_timeout_s=2.0, grade_timeout_s=20.0) as rt:
        yield rt


def test_the_shipped_file_is_built_from_tools_problems():
    spec = importlib.util.spec_from_file_location("problems_src", ENV_DIR / "tools" / "problems.py")
    assert spec is not None
    assert spec.loader is not None
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    assert [json.loads(json.dumps(p, sort_keys=True)) for p in source.PROBLEMS] == ROWS


def test_problem_set_shape():
    ids = [row["id"] for row in ROWS]
    assert len(ids) >= 40
    assert len(set(ids)) == len(ids)
    for row in ROWS:
        assert row["entry_point"] in row["prompt"], row["id"]
        assert len(row["tests"]) >= 3, row["id"]
        assert len({t["name"] for t in row["tests"]}) == len(row["tests"]), row["id"]


def test_the_env_serves_the_problem_set():
    tasks = CodingEnv.task_set
    assert tasks.num_tasks() == len(ROWS)
    assert tasks.by_id("two_sum").data["entry_point"] == "two_sum"


def test_every_reference_solution_scores_one_and_empty_or_wrong_less(rt):
    jobs = []
    for row in ROWS:
        stub = f"{row['entry_point']} = lambda *args, **kwargs: None\n"
        jobs += [(row, "reference", row["solution"]), (row, "empty", ""), (row, "wrong", stub)]
    # one sandbox per half of the batch; every job still runs in its own forked child
    half = len(jobs) // 2
    with ThreadPoolExecutor(2) as pool:
        parts = pool.map(
            lambda part: rt.grader.grade_many([(sol, row["tests"]) for row, _, sol in part]),
            [jobs[:half], jobs[half:]],
        )
        grades = [grade for part in parts for grade in part]
    failures = []
    for (row, kind, _), grade in zip(jobs, grades, strict=True):
        ok = grade.reward == 1.0 if kind == "reference" else grade.reward < 1.0
        if kind == "empty":
            ok = grade.reward == 0.0
        if not ok:
            failures.append((row["id"], kind, grade.to_json()))
    assert not failures, failures


def test_a_hanging_test_times_out_alone(rt):
    tests = [
        {"name": "fast", "code": "assert f() == 1"},
        # past the fixture's 2 s per-test limit: the test's own code hangs in the grader,
        # which cannot cut it short; the grader answers at its end (3 s, not 60)
        {"name": "slow", "code": "f(); import time; time.sleep(3)"},
    ]
    grade = rt.grader.grade("def f():\n    return 1\n", tests)
    assert grade.breakdown() == {"fast": 1.0, "slow": 0.0}
    assert "ran past its time limit" in (grade.results[1].error or "")
    assert grade.reward == 0.5


def test_a_solution_that_kills_its_grader_scores_zero(rt):
    grade = rt.grader.grade("import os\nos._exit(0)\n", [{"name": "t", "code": "assert True"}])
    assert grade.reward == 0.0
    assert grade.results[0].error == "the solution's process exited"  # scored as a wrong answer


def test_jobs_in_one_batch_cannot_touch_each_other(rt):
    tests = [{"name": "t", "code": "assert len([1, 2]) == 2"}]
    sabotage = "import builtins\nbuiltins.len = lambda x: 0\n"
    hang = "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass\n"
    grades = rt.grader.grade_many([(sabotage, tests), ("", tests), (hang, tests), ("x = 1", tests)])
    assert [g.reward for g in grades] == [0.0, 1.0, 0.0, 1.0]
    assert "ran past" in (grades[2].results[0].error or "")


def test_a_failing_solution_fails_every_test_with_its_error(rt):
    grade = rt.grader.grade("raise RuntimeError('nope')\n", [{"name": "a", "code": "pass"}])
    assert grade.reward == 0.0
    assert "RuntimeError: nope" in (grade.solution_error or "")


def test_submit_code_grades_it_with_a_breakdown(rt):
    env = CodingEnv(resources=rt)
    env.reset(options={"task_id": "fizzbuzz"})
    row = next(r for r in ROWS if r["id"] == "fizzbuzz")
    obs = env.step(CodeAction(code=row["solution"], submit=True))
    assert (obs.reward, obs.done, obs.truncated) == (1.0, True, False)
    assert obs.metadata["reward_breakdown"] == {t["name"]: 1.0 for t in row["tests"]}
    assert obs.metadata["grade"]["passed"] == len(row["tests"])
    assert env.state().submitted
    assert env.state().reward == 1.0
    env.close()


def test_submit_without_code_grades_the_cells_that_ran(rt):
    env = CodingEnv(resources=rt)
    env.reset(options={"task_id": "reverse_words"})
    run(env, "def reverse_words(s):\n    return ' '.join(s.split()[::-1])")
    run(env, "raise ValueError('this failed cell is not part of the solution')")
    assert run(env, "reverse_words('a b')").result == "'b a'"
    obs = env.step(CodeAction(submit=True))
    assert obs.reward == 1.0
    assert obs.done
    env.close()


def test_the_last_step_grades_what_is_there(rt):
    env = CodingEnv(resources=rt)
    env.reset(options={"task_id": "fibonacci", "max_steps": 2})
    first = run(env, "def fib(n):\n    return n")  # wrong for most n
    assert first.done is False
    assert first.reward == 0.0
    last = run(env, "fib(1)")
    assert (last.done, last.truncated) == (True, True)
    assert 0.0 < last.reward < 1.0  # fib(0) and fib(1) pass, the rest fail
    assert set(last.metadata["reward_breakdown"].values()) == {0.0, 1.0}
    env.close()


def test_grading_does_not_touch_the_agents_worker(rt):
    env = CodingEnv(resources=rt)
    env.reset(options={"task_id": "two_sum"})
    run(env, "import builtins\nbuiltins.len = lambda x: 0")  # sabotage the worker only
    row = next(r for r in ROWS if r["id"] == "two_sum")
    assert env.step(CodeAction(code=row["solution"], submit=True)).reward == 1.0
    env.close()
