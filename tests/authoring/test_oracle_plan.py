"""The oracle's plan a manifest names (``capabilities.oracle``, ``form: script``,
``location: MODULE:FUNCTION`` or ``FILE.py:FUNCTION``): loaded from the env folder,
found beside an installed env's package, played by ``openenv eval --policy oracle``;
a location that names nothing loadable is a one-line ``PolicyError``."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv._exceptions import PolicyError
from openenv.eval import EvalConfig, load_trajectories, run_eval
from openenv.policy._oracle import is_plan_location, load_plan, plan_for

REPO = Path(__file__).resolve().parents[2]
ECHO = REPO / "envs" / "echo_env"


def test_a_plan_location_is_module_or_file_and_function() -> None:
    assert is_plan_location("browser_env.solutions:reference_plan")
    assert is_plan_location("oracle.py:reference_plan")
    assert is_plan_location("sub/dir/oracle.py:plan")
    assert not is_plan_location("solution/solve.sh")  # upstream's Harbor script: run, not a plan
    assert not is_plan_location("oracle.py")
    assert not is_plan_location("mod:1fn")


def test_echo_plan_from_its_folder_and_found_by_env_name() -> None:
    plan = load_plan("oracle.py:reference_plan", ECHO)
    actions = plan({"echoed_message": "Echo environment ready!"})
    assert actions == [{"message": "#" * 65536}]  # 0.1 a character: 6553.6, the declared top
    found = plan_for("echo_env")  # the installed echo_env package's openenv.yaml names it
    assert found is not None
    assert found({}) == actions
    assert plan_for("no_such_env_anywhere") is None


@pytest.mark.parametrize(
    ("location", "said"),
    [
        ("nope.py:reference_plan", "capabilities.oracle.location: no file"),
        ("oracle.py:no_such_function", "has no function 'no_such_function'"),
        ("no_such_module_xyz.sub:plan", "cannot be loaded: No module named 'no_such_module_xyz'"),
        ("solution/solve.sh", "is not MODULE:FUNCTION or FILE.py:FUNCTION"),
    ],
)
def test_a_location_that_names_nothing_loadable_is_one_line(location: str, said: str) -> None:
    with pytest.raises(PolicyError) as info:
        load_plan(location, ECHO)
    assert said in str(info.value)
    assert "\n" not in str(info.value)


def test_eval_oracle_plays_the_plan_the_manifest_names(tmp_path: Path) -> None:
    """``openenv eval envs/echo_env --policy oracle``: no task data, the plan's one step."""
    results = run_eval(EvalConfig(env=str(ECHO), policy="oracle", out=tmp_path, count=2, max_turns=3))
    assert results["errors"] == 0, results["error_kinds"]
    trajectories = load_trajectories(tmp_path)
    assert [t.reward for t in trajectories] == [6553.6, 6553.6]
    assert all(len(t.turns) == 2 and t.turns[1].action is None for t in trajectories)  # one step, then stop
