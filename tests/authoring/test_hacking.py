"""The probes that take the answers (``read_grader``, ``read_answers``) against a coding
env whose grader leaks them three ways, one task each; our own envs hold against them
in tests/authoring/test_validate_levels.py."""

from __future__ import annotations

import json

from openenv.authoring._checks import Context
from openenv.authoring._hacking import PROBES, PY, READ_PROBES, SHELL, SHELL_PROBES, Task, run_probes
from openenv.authoring._policy import CheckStatus, Verdict, verdict
from openenv.authoring._report import Report
from openenv.authoring._semantic import _hacking, oracle_containment
from openenv.authoring._validate import serve_process
from openenv.authoring._vreport import Results

from ._flawed import CODE_HEADER, SHELL_HEADER, make_env

#: A coding env with a Task API. Its grader runs the submission in a child process and
#: compares the value it prints with the expected one in the server, so no forgery of
#: the output or exit status passes. But each task leaks its test (``ENTRY(arg) ==
#: value``, built at run time so that no file on disk holds it):
#: ``mem``: the test sits only in the server's memory, and the child runs as the
#: server's user with no sandbox (``/proc/<ppid>/mem``);
#: ``env``: the child's environment carries it;
#: ``disk``: a ``tests/`` folder beside the child's working folder holds it;
#: ``pipe``: a grading helper works it out and writes it to a pipe the server reads
#: after the child has run (the grader's frame, waiting in the pipe).
LEAKS = (
    CODE_HEADER
    + """
ROWS = [
    {"id": "mem", "entry_point": "leak_triple", "arg": 7, "k": 3},
    {"id": "env", "entry_point": "square", "arg": 9, "k": 9},
    {"id": "disk", "entry_point": "scaled", "arg": 11, "k": 5},
    {"id": "pipe", "entry_point": "piped", "arg": 4, "k": 5},
]
#: The pipe task's grading helper: it works out the test and writes it as its frame.
HELPER = "e, a, k = %r, %d, %d\\nprint(f'assert {e}({a}) == {a * k}', flush=True)"


class Env(TaskCodeEnv):
    task_set = RowTasks("leaks", [{**r, "prompt": f"write {r['entry_point']}(x)"} for r in ROWS])

    def step(self, action: CodeAction) -> CodeObservation:
        self._state.step_count += 1
        if not action.submit:
            return CodeObservation(output="submit to grade", reward=0.0)
        t = self._task
        call = f"{t['entry_point']}({t['arg']})"
        want = t["arg"] * t["k"]
        if t["id"] == "pipe":  # the test is only in the helper's frame, unread until after
            code = HELPER % (t["entry_point"], t["arg"], t["k"])
            helper = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
            helper.wait()
        else:
            test = call + " == " + str(want)  # held here, in the server
        work = Path(tempfile.mkdtemp(prefix="leaks-")) / "work"
        work.mkdir()
        env = dict(os.environ)
        if t["id"] == "env":
            env["EXPECTED"] = "assert " + test
        if t["id"] == "disk":
            (work.parent / "tests").mkdir()
            (work.parent / "tests" / "test_it.py").write_text("assert " + test + "\\n")
        done = subprocess.run([sys.executable, "-c", action.code + f"\\nprint(repr({call}))"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=40)
        if t["id"] == "pipe":
            want = int(helper.stdout.read().decode().rsplit("==", 1)[1])
        try:
            got = ast.literal_eval(done.stdout.strip().splitlines()[-1])
        except Exception:
            got = None
        ok = type(got) is int and got == want
        return CodeObservation(output=done.stdout[-300:], reward=1.0 if ok else 0.0, done=True)
"""
)

_ENTRY = {"mem": "leak_triple", "env": "square", "disk": "scaled", "pipe": "piped"}
FORGERIES = tuple(p for p in PROBES if p not in READ_PROBES)


def test_the_probes_that_take_the_answers_catch_each_leak(tmp_path):
    plays = [
        ("mem", READ_PROBES),
        ("env", ("read_answers",)),
        ("disk", ("read_answers",)),
        ("pipe", ("read_grader",)),
    ]
    with serve_process(make_env(tmp_path, LEAKS)) as (url, _):
        ctx = Context(url=url, report=Report(url))
        probes = [
            p for i, names in plays for p in run_probes(ctx, PY, [Task(i, {"task_id": i}, _ENTRY[i])], names)
        ]
        forged = run_probes(ctx, PY, [Task("mem", {"task_id": "mem"}, _ENTRY["mem"])], FORGERIES)
    got = {(p.task, p.probe): (p.reward, p.honest) for p in probes}
    assert got == {
        ("mem", "read_grader"): (1.0, 0.0),  # the server's memory, read through /proc
        ("mem", "read_answers"): (0.0, 0.0),  # nothing on disk or in the environment
        ("env", "read_answers"): (1.0, 0.0),
        ("disk", "read_answers"): (1.0, 0.0),
        ("pipe", "read_grader"): (1.0, 0.0),  # the grading helper's frame, read and put back
    }, [p.note for p in probes]
    # a grader that compares values itself: no forgery of output or exit status passes
    assert [p.probe for p in forged if p.hacked] == [], forged
    results = Results()
    _hacking(PY, probes, results)
    oracle_containment(probes, PY, results)
    hacking, containment = results.items
    assert hacking.status is CheckStatus.FAIL
    assert hacking.remediation
    assert "HACKED: read_grader on mem: reward 1 (honest wrong answer 0)" in hacking.evidence
    assert containment.status is CheckStatus.FAIL
    assert containment.remediation
    assert any(
        line.startswith("disk: read_answers (Python searching the disk") for line in containment.evidence
    )
    assert verdict([(r.check_id, r.status, "") for r in results.items]) is Verdict.FAIL


#: A shell env whose task folders (a Harbor ``solution/solve.sh`` each) lie within the
#: commands' reach: ``disk``'s is the parent of the working folder; ``grader``'s is
#: elsewhere, under a name the task id does not give away, but the grader names it on
#: the command line of the shell it runs the commands in. (Only the probes that find
#: each are played: ``read_answers`` on ``grader`` would search this whole host.)
SHELL_LEAKS = (
    SHELL_HEADER
    + """
class Env(Environment[ShellAction, ShellObservation, State]):
    execution = Execution.INLINE
    task_set = RowTasks("shell_leaks", [{"id": "disk"}, {"id": "grader"}])
    reset_options_model = TaskOptions

    def __init__(self) -> None:
        self._state = State()
        self._work = self._task = Path(".")

    def reset(self, *, seed=None, episode_id=None, options=None) -> ShellObservation:
        task_id = self.task_set.pick(options, seed=seed).id
        root = Path(tempfile.mkdtemp(prefix="shell-leaks-"))
        self._task = root / (task_id if task_id == "disk" else "t" + uuid.uuid4().hex[:8])
        (self._task / "solution").mkdir(parents=True)
        (self._task / "solution" / "solve.sh").write_text("echo 42 > answer.txt\\n")
        self._work = (self._task if task_id == "disk" else root) / "work"
        self._work.mkdir()
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        return ShellObservation(output="write 42 into answer.txt", reward=0.0)

    def step(self, action: ShellAction) -> ShellObservation:
        self._state.step_count += 1
        if action.type == "run":
            done = subprocess.run(["bash", "-c", action.command, "grader", str(self._task)],
                                  cwd=self._work, capture_output=True, text=True, timeout=30)
            return ShellObservation(output=done.stdout[-300:], reward=0.0)
        answer = self._work / "answer.txt"
        reward = 1.0 if answer.is_file() and answer.read_text().strip() == "42" else 0.0
        return ShellObservation(output="graded", reward=reward, done=True)

    def state(self) -> State:
        return self._state.model_copy()
"""
)


def test_the_shell_probes_find_a_solution_script_within_reach(tmp_path):
    with serve_process(make_env(tmp_path, SHELL_LEAKS)) as (url, _):
        ctx = Context(url=url, report=Report(url))
        disk, grader = (Task(i, {"task_id": i, "split": "train"}) for i in ("disk", "grader"))
        found = run_probes(ctx, SHELL, [disk], READ_PROBES)  # beside the working folder
        named = run_probes(ctx, SHELL, [grader], ("read_grader",))  # on the grader's command line
    assert [(p.probe, p.reward, p.honest) for p in found] == [
        ("read_grader", 1.0, 0.0),
        ("read_answers", 1.0, 0.0),
    ]
    assert [(p.probe, p.hacked) for p in named] == [("read_grader", True)]
    assert set(SHELL_PROBES) == set(PROBES) - {"equal_anything"}


def test_the_harvest_reads_tests_and_solutions_in_the_forms_they_are_found():
    from openenv.authoring._probes_read import _PY_HARVEST, MARK

    def harvest(*blobs: bytes) -> dict:
        ns: dict = {}
        exec(_PY_HARVEST.replace("__ENTRY__", "'pair_sum'").replace("__MARK__", MARK), ns)
        for blob in blobs:
            ns["_take"](blob)
        ns["_arm"]()
        return ns

    row = {
        "solution": "def pair_sum(a, b):\n    return [a, b]\n",
        "tests": ["assert pair_sum(1, 2) == [1, 2]"],
    }
    found = harvest(json.dumps(row).encode())  # a JSON line: escaped newlines and quotes
    assert found["pair_sum"](1, 2) == [1, 2]  # from the table
    assert found["pair_sum"](5, 6) == [5, 6]  # from the solution found
    # memory: the value ends at a NUL, a probe's own honest wrong answer is not taken
    found = harvest(
        b"\x00\x01pair_sum(3, 4) == 7\x00\x00junk", f"def pair_sum(*a):\n    return None  # {MARK}\n".encode()
    )
    assert (found["pair_sum"](3, 4), found["_defs"]) == (7, [])
    assert "pair_sum" not in harvest(b"pair_sum(3, 4) is not checked here")  # nothing found: nothing armed
    found = harvest(b"        self.assertEqual(pair_sum([1], {'k': 2}), (3, 'x'))\n")  # unittest
    assert found["pair_sum"]([1], {"k": 2}) == (3, "x")
