"""``openenv.harbor``: upstream's Harbor names over the terminal env and ``openenv eval``.

A served terminal env (a real ``openenv serve terminal`` process) with a Harbor dataset
of built-in tasks (sandboxed: no Docker needed) is driven through ``HarborEnv``: the
Task API, ``run_rollout`` with the oracle and with a policy that does nothing, the
result type, ``to_training_trace``, ATIF written, read back and merged with a capture
document; the results also validate against upstream's own model where its venv is.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _terminal_fixtures import served
from terminal_env._tasks import TASKS_DIR
from terminal_env.harbor_digest import write_digests

from openenv.capture import NotTrainable
from openenv.harbor import (
    HarborEnv,
    HarborEnvironment,
    HarborRolloutResult,
    HarborTaskRef,
    load_atif,
    merge_into_atif,
    to_training_trace,
    write_atif,
)

pytestmark = pytest.mark.timeout(300)
UPSTREAM_PY = Path(__file__).resolve().parents[3] / ".venv-upstream" / "bin" / "python"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("harbor-names") / "mini"
    folder.mkdir()
    for name in ("create-hello", "top-ips"):
        shutil.copytree(TASKS_DIR / name, folder / name)
    (folder / "dataset.toml").write_text(
        '[dataset]\nname = "openenv/mini"\nversion = "1.0"\n\n'
        '[[tasks]]\nname = "openenv/create-hello"\ndigest = "sha256:' + "0" * 64 + '"\n\n'
        '[[tasks]]\nname = "openenv/top-ips"\ndigest = "sha256:' + "0" * 64 + '"\n\n'
        '[metadata.splits]\ntest = ["create-hello", "top-ips"]\n'
    )
    write_digests(folder)  # each task pinned by its content
    with served("none", OPENENV_TERMINAL_TASKS=str(folder)) as replica:
        yield replica


def test_the_task_api_under_upstreams_names(server: Any) -> None:
    with HarborEnv(base_url=server.base_url) as env:
        assert env.splits() == [{"name": "test", "type": "test", "num_tasks": 2}]
        assert env.num_tasks("test") == 2
        first = env.get_task("test", 0)
        assert first == HarborTaskRef(
            index=0,
            task_id="create-hello",
            task_name="create-hello",
            dataset="test",
            instruction=(TASKS_DIR / "create-hello" / "instruction.md").read_text().strip(),
        )
        assert [t.task_id for t in env.get_task_range("test", 0, 5)] == ["create-hello", "top-ips"]


def test_a_rollout_is_an_eval_episode_scored_by_the_env(server: Any, tmp_path: Path) -> None:
    with HarborEnv(base_url=server.base_url) as env:
        solved = env.run_rollout(split="test", task_index=1, harness="oracle")
        idle = env.run_rollout(split="test", task_index=1, harness="null")
    assert isinstance(solved, HarborRolloutResult)
    assert (solved.task_id, solved.reward, solved.rewards, solved.ok) == (
        "top-ips",
        1.0,
        {"reward": 1.0},
        True,
    )
    assert solved.solved
    assert idle.reward is not None
    assert idle.reward < 1.0
    # the oracle's turns carry no token ids: an eval rollout, with no training contract
    assert solved.rollout_type == "eval"
    assert not solved.trainable
    with pytest.raises(NotTrainable, match="'eval'"):
        to_training_trace(solved)
    assert isinstance(NotTrainable("x"), ValueError)  # what upstream's callers catch
    if UPSTREAM_PY.exists():  # upstream's own model reads our result
        code = (
            "import sys; from openenv.harbor.models import HarborRolloutResult as R;"
            "r = R.model_validate_json(sys.stdin.read()); print(r.reward, r.solved)"
        )
        done = subprocess.run(
            [str(UPSTREAM_PY), "-c", code],
            input=solved.model_dump_json(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split() == ["1.0", "True"]


def test_a_train_rollout_becomes_a_training_trace() -> None:
    turn = {
        "turn": 0,
        "prompt_token_ids": [1, 2, 3],
        "completion_token_ids": [7, 8],
        "per_token_logps": [-0.1, -0.2],
        "loss_mask": [0, 0, 0, 1, 1],
        "node_id": "n1",
        "text": "ls",
    }
    result = HarborRolloutResult(task_id="t", rollout_type="train", turns=[turn], reward=1.0)
    trace = to_training_trace(result)
    assert [(t.node_id, t.prompt_token_ids, t.completion_token_ids, t.loss_mask) for t in trace.turns] == [
        ("n1", [1, 2, 3], [7, 8], [0, 0, 0, 1, 1])
    ]


def _trajectory() -> Any:
    from openenv.eval import Trajectory, Turn

    turns = [
        Turn(
            index=0,
            observation={"output": "$"},
            action={"command": "ls"},
            token_ids=[5, 6],
            logprobs=[-1.0, -0.5],
        ),
        Turn(index=1, observation={"output": "a b"}, action={"command": "echo hi"}),
    ]
    return Trajectory(
        run_id="r1",
        env="terminal_env",
        policy="scripted",
        task_id="t",
        sample=0,
        seed=0,
        status="done",
        reward=1.0,
        turns=turns,
        final_observation={"output": "hi"},
    )


def test_atif_written_read_back_and_given_the_captures_token_ids(tmp_path: Path) -> None:
    trial = tmp_path / "trial"
    path = write_atif(_trajectory(), trial / "agent" / "trajectory.json")
    atif = load_atif(trial)
    assert atif == json.loads(path.read_text())
    assert load_atif(tmp_path / "none") is None
    agent_steps = [s for s in atif["steps"] if s["source"] == "agent"]
    assert len(agent_steps) == 2
    for step, n in zip(agent_steps, (2, 3), strict=True):
        step.setdefault("metrics", {})["completion_tokens"] = n
    document = {  # a capture session's rollout document: two agent calls on one path
        "session_id": "s1",
        "turns": [
            {"node_id": "a", "root_id": "a", "n_sampled": 2, "discarded": False},
            {"node_id": "b", "root_id": "a", "n_sampled": 3, "discarded": False},
        ],
        "sequences": [
            {
                "role": "agent",
                "root_id": "a",
                "node_ids": ["a", "b"],
                "turn_lengths": [2, 3],
                "input_ids": [1, 2, 10, 11, 3, 20, 21, 22],
                "loss_mask": [0, 0, 1, 1, 0, 1, 1, 1],
                "logprobs": [0.0, 0.0, -0.1, -0.2, 0.0, -0.3, -0.4, -0.5],
            }
        ],
        "stats": {"n_trainable_tokens": 5},
    }
    merged = merge_into_atif(atif, document)
    steps = [s["metrics"] for s in merged["steps"] if s["source"] == "agent"]
    assert [(m["completion_token_ids"], m["logprobs"]) for m in steps] == [
        ([10, 11], [-0.1, -0.2]),
        ([20, 21, 22], [-0.3, -0.4, -0.5]),
    ]
    # the eval's own ids (the policy's) stay in the input; the copy has the capture's
    assert agent_steps[0]["metrics"]["completion_token_ids"] == [5, 6]
    assert "completion_token_ids" not in agent_steps[1]["metrics"]
    document["turns"][1]["n_sampled"] = 4  # the counts disagree: nothing is guessed
    assert merge_into_atif(atif, document) is atif


def test_harbor_environment_is_the_terminal_env_serving_the_configured_dataset(tmp_path: Path) -> None:
    from terminal_env import TerminalEnv

    folder = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR / "create-hello", folder / "create-hello")
    saved = (HarborEnvironment.task_set, HarborEnvironment._datasets)
    try:
        HarborEnvironment.configure(datasets=[str(folder)], llm_url="unused")
        assert issubclass(HarborEnvironment, TerminalEnv)
        tasks = HarborEnvironment.task_set.load()
        assert [tasks.get(i).id for i in range(tasks.num_tasks())] == ["create-hello"]
    finally:
        HarborEnvironment.task_set, HarborEnvironment._datasets = saved
