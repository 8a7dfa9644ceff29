"""The persistent worker as a session sees it: state, output, values, errors, timeouts."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
from _coding_fixtures import new_env, run, runtime, value
from coding_env import CodeAction


@pytest.fixture(scope="module")
def rt():
    with runtime("auto") as rt:
        yield rt


@pytest.fixture
def env(rt):
    env = new_env(rt)
    yield env
    env.close()


def test_state_persists_between_cells(env):
    run(env, "x = 40\ndef inc(v):\n    return v + 1")
    assert value(env, "inc(x) + 1") == "42"
    run(env, "import collections\ncounter = collections.Counter('hello')")
    assert value(env, "counter['l']") == "2"
    assert env.state().execution_count == 4


def test_execution_count_and_duration(env):
    first, second = run(env, "pass"), run(env, "1")
    assert (first.execution_count, second.execution_count) == (1, 2)
    assert 0 <= first.duration_s < 1.0


def test_trailing_expression_value(env):
    assert value(env, "1 + 1") == "2"
    assert value(env, "x = 3") is None
    assert value(env, "'a' * 3") == "'aaa'"
    assert value(env, "None") is None
    assert value(env, "y = [1, 2]\ny") == "[1, 2]"
    assert value(env, "_") == "[1, 2]"  # the last value, as in a REPL
    assert run(env, "print('p')").result is None  # print returns None


def test_stdout_and_stderr_are_captured(env):
    obs = run(env, "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.stdout.write('more\\n')")
    assert obs.stdout == "out\nmore\n"
    assert obs.stderr == "err\n"
    assert run(env, "1").stdout == ""  # each cell starts empty


def test_child_process_output_is_captured(env):
    obs = run(env, "import os, subprocess\nos.system('echo from-shell; echo to-err >&2')\n"
                   "subprocess.run(['echo', 'from-subprocess'])")
    assert "from-shell\n" in obs.stdout
    assert "from-subprocess\n" in obs.stdout
    assert obs.stderr == "to-err\n"


def test_large_output_keeps_head_and_tail(env):
    obs = run(env, "print('HEAD' + 'x' * 100000 + 'TAIL')")  # output_limit is 1024 bytes
    assert obs.stdout.startswith("HEADxxx")
    assert obs.stdout.endswith("xxxTAIL\n")
    total = 4 + 100000 + 4 + 1
    assert obs.stdout_omitted_bytes == total - 1024
    assert f"[... {total - 1024} bytes omitted ...]" in obs.stdout
    assert len(obs.stdout) < 1200


def test_output_flood_from_a_child_is_bounded(env):
    obs = run(env, "import os\nos.system('head -c 5000000 /dev/zero | tr \"\\\\0\" y')")
    assert obs.stdout_omitted_bytes == 5_000_000 - 1024
    assert obs.stdout.startswith("yyy")
    assert obs.stdout.endswith("yyy")


def test_exception_with_traceback(env):
    obs = run(env, "def f():\n    return 1 / 0\nf()")
    assert obs.exception is not None
    assert (obs.exception.type, obs.exception.message) == ("ZeroDivisionError", "division by zero")
    tb = obs.exception.traceback
    assert 'File "<cell 1>", line 3' in tb
    assert "return 1 / 0" in tb
    assert "<string>" not in tb  # the worker's own frames are hidden
    assert value(env, "2") == "2"  # the worker carries on


def test_syntax_error(env):
    obs = run(env, "def broken(:\n    pass")
    assert obs.exception is not None
    assert obs.exception.type == "SyntaxError"
    assert "<cell 1>" in obs.exception.traceback


def test_output_before_an_exception_is_kept(env):
    obs = run(env, "print('before')\nraise ValueError('boom')")
    assert obs.stdout == "before\n"
    assert obs.exception is not None
    assert obs.exception.message == "boom"


def test_sys_exit_is_an_exception_not_an_exit(env):
    run(env, "keep = 'me'")
    obs = run(env, "import sys\nsys.exit(3)")
    assert obs.exception is not None
    assert obs.exception.type == "SystemExit"
    assert obs.state_lost is False
    assert value(env, "keep") == "'me'"


def test_timeout_interrupts_and_keeps_state(env):
    run(env, "kept = [1, 2, 3]")
    obs = run(env, "import time\ntime.sleep(60)")
    assert obs.timed_out is True
    assert obs.state_lost is False
    assert obs.exception is not None
    assert obs.exception.type == "KeyboardInterrupt"
    assert obs.duration_s >= 1.0  # stopped at the cell's timeout, not before
    # answered within the grace period: past it the worker is killed and its state lost
    assert value(env, "kept") == "[1, 2, 3]"


def test_busy_loop_is_interrupted(env):
    run(env, "n = 0")
    obs = run(env, "while True:\n    n += 1")
    assert obs.timed_out
    assert not obs.state_lost
    assert int(value(env, "n") or 0) > 0  # the loop's progress is kept


def test_hard_hang_is_killed_and_state_lost(env):
    run(env, "secret = 1")
    obs = run(env, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass")
    assert obs.timed_out is True
    assert obs.state_lost is True
    assert obs.exception is not None
    assert obs.exception.type == "StateLost"
    assert obs.duration_s < 10.0  # 1.0 timeout + 0.5 grace + a fresh worker (loaded box: slack)
    gone = run(env, "secret")
    assert gone.exception is not None
    assert gone.exception.type == "NameError"
    assert env.state().restarts == 1


def test_interrupt_catching_loop_is_killed(env):
    code = (
        "import time\nwhile True:\n    try:\n        time.sleep(10)\n"
        "    except KeyboardInterrupt:\n        pass"
    )
    obs = run(env, code)
    assert obs.timed_out
    assert obs.state_lost


def test_worker_exit_loses_state_without_timeout(env):
    run(env, "a = 1")
    obs = run(env, "import os\nos._exit(7)")
    assert obs.state_lost is True
    assert obs.timed_out is False
    assert value(env, "1 + 1") == "2"


def test_server_interrupt_hook_stops_a_cell(env):
    """``interrupt()`` is what the server calls when a call overruns its deadline."""
    env.settings = dataclasses.replace(env.settings, cell_timeout_s=30.0)
    run(env, "z = 9")
    timer = threading.Timer(0.3, env.interrupt)
    timer.start()
    start = time.monotonic()
    obs = run(env, "import time\ntime.sleep(20)")
    timer.join()
    assert time.monotonic() - start < 5
    assert obs.exception is not None
    assert obs.exception.type == "KeyboardInterrupt"
    assert value(env, "z") == "9"


def test_reset_gives_a_fresh_worker(env):
    run(env, "old = 1")
    env.reset(options={"task_id": "fizzbuzz"})
    obs = run(env, "old")
    assert obs.exception is not None
    assert obs.exception.type == "NameError"
    assert env.state().task_id == "fizzbuzz"


def test_fork_children_do_not_answer(env):
    obs = run(env, "import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(0.2)\nx = 'after'")
    assert obs.exception is None
    time.sleep(0.4)
    assert value(env, "x") == "'after'"  # the child's late reply was not taken as this one


def test_step_after_submit_is_refused(env):
    env.step(CodeAction(code="", submit=True))
    with pytest.raises(RuntimeError, match="episode is over"):
        run(env, "1")
