"""The reasoning-gym env over a real server: three families, the family's own scorer,
determinism in the seed, and a typed error for an unknown family."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import reasoning_gym  # type: ignore[import-untyped]
from reasoning_gym_env import MODELS, ReasoningGymEnv, RGAction, RGOptions, families

from openenv import EnvClient
from openenv._exceptions import TaskNotFound
from openenv.containers._local import free_port
from tests._served import stop_child, wait_served

ENV_DIR = Path(__file__).resolve().parents[1]
FAMILIES = ["basic_arithmetic", "leg_counting", "chain_sum"]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """``openenv serve envs/reasoning_gym_env`` in a child process, on a free loopback port."""
    port = free_port()
    cmd = [sys.executable, "-m", "openenv", "serve", str(ENV_DIR), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_served(base, proc)
        yield base
    finally:
        stop_child(proc)


def _entry(family: str, seed: int, size: int = 1000) -> dict[str, Any]:
    """The entry the env asks for ``seed``, straight from reasoning-gym."""
    dataset = reasoning_gym.create_dataset(family, size=size, seed=0)
    return dict(dataset[random.Random(seed).randrange(size)])


@pytest.mark.parametrize("family", FAMILIES)
def test_oracle_answer_scores_full_marks_and_a_wrong_one_does_not(url: str, family: str) -> None:
    expected = _entry(family, seed=7)
    with EnvClient(url, MODELS) as env:
        first = env.reset(seed=7, family=family)
        assert first.observation.prompt == expected["question"]
        assert first.observation.family == family
        assert not first.done
        right = env.step(RGAction(answer=expected["answer"]))
        assert right.reward == 1.0
        assert right.done
        assert right.observation.metadata["expected"] == expected["answer"]
        with pytest.raises(Exception, match="episode is over"):
            env.step(RGAction(answer=expected["answer"]))
        env.reset(seed=7, family=family)
        wrong = env.step(RGAction(answer=f"{expected['answer']}0 not this"))
        assert wrong.done
        assert wrong.reward is not None
        assert 0.0 <= wrong.reward < 1.0


def test_same_seed_same_question_and_options_change_it(url: str) -> None:
    with EnvClient(url, MODELS) as env:
        prompts = [env.reset(seed=s, family="chain_sum").observation.prompt for s in (3, 3, 4)]
        assert prompts[0] == prompts[1]
        assert prompts[0] != prompts[2]
        other_dataset = env.reset(seed=3, family="chain_sum", dataset_seed=1).observation.prompt
        assert other_dataset != prompts[0]
        by_index = env.reset(family="chain_sum", index=5, size=10, config={"min_terms": 4, "max_terms": 4})
        entry = reasoning_gym.create_dataset("chain_sum", size=10, seed=0, min_terms=4, max_terms=4)[5]
        assert by_index.observation.prompt == entry["question"]
        assert env.state().index == 5


def test_unknown_family_and_bad_config_are_typed_errors(url: str) -> None:
    with EnvClient(url, MODELS) as env:
        with pytest.raises(TaskNotFound, match="unknown reasoning-gym family 'no_such_family'"):
            env.reset(seed=1, family="no_such_family")
        with pytest.raises(TaskNotFound, match="invalid config for reasoning-gym family 'chain_sum'"):
            env.reset(seed=1, family="chain_sum", config={"bogus": 1})
        with pytest.raises(TaskNotFound, match="beyond the dataset's size"):
            env.reset(family="chain_sum", index=10, size=10)
        assert env.reset(seed=1, family="leg_counting").observation.prompt  # the session still works


def test_env_kwargs_unknown_family_is_one_line() -> None:
    cmd = [
        sys.executable,
        "-m",
        "openenv",
        "serve",
        str(ENV_DIR),
        "--port",
        str(free_port()),
        "--env-kwargs",
        '{"family": "no_such_family"}',
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("openenv serve: --env-kwargs: ReasoningGymEnv")
    assert "unknown reasoning-gym family 'no_such_family'" in lines[0]


def test_env_kwargs_set_the_default_family() -> None:
    env = ReasoningGymEnv(family="leg_counting", size=50)
    obs = env.reset(seed=2)
    assert obs.family == "leg_counting"
    assert obs.prompt == _entry("leg_counting", seed=2, size=50)["question"]
    assert env.reset(seed=2, options=RGOptions(family="chain_sum")).family == "chain_sum"


def test_families_lists_the_registry() -> None:
    served = families()
    assert set(FAMILIES) <= set(served)
    assert served == sorted(served)


def test_task_api_lists_the_families(url: str) -> None:
    with httpx.Client(base_url=url, timeout=10) as http:
        names = http.get("/list_environments").json()
        assert len(names) == 1
        name = names[0]
        assert http.get(f"/{name}/splits").json() == [{"name": "train", "type": "train"}]
        listed = http.post(f"/{name}/tasks", json={"split": "train"}).json()["tasks"]
        assert [t["id"] for t in listed] == families()
        assert http.post(f"/{name}/num_tasks", json={"split": "train"}).json() == {
            "num_tasks": len(families())
        }
        chain_sum = next(t for t in listed if t["id"] == "chain_sum")
        assert chain_sum["data"]["family"] == "chain_sum"
        assert {"min_terms", "max_terms"} <= set(chain_sum["data"]["config_fields"])


def test_a_task_api_id_picks_the_family(url: str) -> None:
    """What ``openenv eval`` (and ``openenv validate --level semantic``) sends for a task
    of the Task API: ``task_id`` and ``split``. The family's question, same seed."""
    with EnvClient(url, MODELS) as env:
        by_id = env.reset(seed=5, task_id="chain_sum", split="train").observation
        assert (by_id.family, by_id.prompt) == ("chain_sum", _entry("chain_sum", 5)["question"])
        with pytest.raises(TaskNotFound, match="no split 'test'"):
            env.reset(seed=5, task_id="chain_sum", split="test")
        with pytest.raises(TaskNotFound, match="task_id 'chain_sum' and family 'leg_counting' disagree"):
            env.reset(seed=5, task_id="chain_sum", family="leg_counting")


def test_every_listed_task_resets_and_composite_mixes_the_families_named(url: str) -> None:
    """Each task the Task API lists starts an episode by its id alone (``composite`` was
    listed and refused: it has no default mix); ``composite`` itself takes its mix as JSON
    (reasoning-gym takes ``DatasetSpec`` objects only: dicts were a 500)."""
    with httpx.Client(base_url=url, timeout=30) as http:
        name = http.get("/list_environments").json()[0]
        listed = [t["id"] for t in http.post(f"/{name}/tasks", json={"split": "train"}).json()["tasks"]]
    assert "composite" not in listed
    with EnvClient(url, MODELS) as env:
        for task_id in listed:
            assert env.reset(seed=1, task_id=task_id).observation.family == task_id
        mix = [{"name": "chain_sum", "weight": 1}, {"name": "leg_counting", "weight": 2, "config": {}}]
        specs = [
            reasoning_gym.composite.DatasetSpec(m["name"], m["weight"], m.get("config", {})) for m in mix
        ]
        expected = reasoning_gym.create_dataset("composite", size=20, seed=0, datasets=specs)[4]
        first = env.reset(family="composite", size=20, index=4, config={"datasets": mix}).observation
        assert first.prompt == expected["question"]
        assert env.step(RGAction(answer=expected["answer"])).reward == 1.0
        for bad, message in [
            ({}, "it mixes other families"),
            ({"datasets": [{"name": "composite", "weight": 1}]}, "'composite' is not a reasoning-gym family"),
            ({"datasets": [{"name": "chain_sum", "weight": -1}]}, "Weight must be positive"),
            ({"datasets": [{"name": "chain_sum", "weight": "x"}]}, "is not a number"),
        ]:
            with pytest.raises(TaskNotFound, match=message):
                env.reset(family="composite", config=bad)
        with pytest.raises(TaskNotFound, match="it mixes other families"):
            env.reset(task_id="composite")
