"""Training on captured agent runs (issue 31): the real loop, end to end, token-exact.

A terminal env server (bubblewrap sandbox where the host has it) on two tasks of the
``name_file_tasks`` family; ``AgentRunTrainer`` serving a small checkpoint in-process,
the capture proxy in front of it, ``SimpleShellAgent`` runs through the proxy with the
official ``openai`` SDK. The checkpoint is ``command_prior``'s (it answers ``touch`` and
a letter drawn blindly: reward 1 or 0.5), trained once and kept in ``.cache/tiny-models``;
a group of 8 runs then gets both rewards with near certainty (8 alike: 2 ** -7 a group).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from openenv.agentrl import (
    AgentRunTrainer,
    SimpleShellAgent,
    command_prior,
    name_file_tasks,
    trace_episodes,
)
from openenv.capture import TrainingTrace, TrainingTurn
from openenv.cli import main as cli_main
from openenv.train import TrainConfig

from ..policy._models import cached

pytest.importorskip("openai", reason="the agent speaks through the openai SDK (the capture extra)")
terminal_env = pytest.importorskip("terminal_env", reason="envs/terminal_env is not installed")

LETTERS = "ab"
SOURCES = ("agentrl/_tasks.py", "agentrl/_simple.py", "train/_hf.py")


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """One torch thread: on a busy 2-core host, two spin-waiting threads per op make each
    step of these small models ~10x slower (measured)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def prior(one_thread: None) -> Path:
    """``command_prior``'s checkpoint for ``LETTERS``, made once per version of its code."""
    package = Path(__file__).resolve().parents[2] / "openenv"
    return cached(
        "agent-prior",
        [*((package / f).read_text() for f in SOURCES), LETTERS],
        lambda path: command_prior(
            path,
            [f"create an empty file named {c}." for c in LETTERS],
            [f"touch {c}" for c in LETTERS],
            steps=80,
        ),
    )


@pytest.fixture(scope="module")
def terminal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """The terminal env served on the family's tasks: (URL, task ids)."""
    from openenv.server import create_app, serve_in_background

    root = tmp_path_factory.mktemp("agent-tasks")
    ids = name_file_tasks(root, LETTERS)
    app = create_app(terminal_env.TerminalEnv, env_kwargs={"tasks_dir": str(root), "pool_size": 16})
    with serve_in_background(app, start_timeout_s=60.0) as server:
        yield server.url, ids


def _config(url: str, model: Path, out: Path, **kw: Any) -> TrainConfig:
    base: dict[str, Any] = {
        "env": [url],
        "model": str(model),
        "steps": 2,
        "group_size": 8,
        "prompts_per_step": 2,
        "max_new_tokens": 12,
        "lr": 1e-3,
        "out": str(out),
        "progress": False,
        "tensorboard": False,
    }
    return TrainConfig.from_dict({**base, **kw})


def test_agent_runs_train_token_exact_and_push_weights(
    prior: Path, terminal: tuple[str, list[str]], tmp_path: Path
) -> None:
    """Step 0: one-command runs; each trained row is its run's captured ids and logprobs,
    the sampled ids decode to the command the agent ran, the verifier's reward matches the
    command, the learner's logprobs equal the captured ones, and the served weights become
    the learner's new ones. Step 1: two-command runs, each one row (the second call
    continues the first by prefix), sampled by the pushed weights (gap at float noise)."""
    import transformers

    url, tasks = terminal
    eos = transformers.AutoTokenizer.from_pretrained(prior).eos_token_id
    with AgentRunTrainer(_config(url, prior, tmp_path), tasks) as trainer:
        before = trainer.served.state()
        row = trainer.step(0)
        assert row["failed"] == 0, row["errors"]
        assert row["episodes"] == 16
        assert row["logprob_gap"] < 1e-4  # the learner scores exactly the captured tokens
        rewards = set()
        for run in trainer.runs:
            assert run.trace is not None
            assert len(run.trace.turns) == 1
            assert len(run.rows) == 1
            turn, episode = run.trace.turns[0], run.rows[0]
            assert episode.tokens == turn.prompt_token_ids + turn.completion_token_ids
            assert episode.mask == turn.loss_mask
            assert episode.logprobs[len(turn.prompt_token_ids) :] == turn.per_token_logps
            sampled = turn.completion_token_ids
            text = trainer.served.model.decode(sampled[:-1] if sampled[-1] == eos else sampled).strip()
            assert run.commands == ([text] if text and text != "done" else [])  # what the agent ran
            letter = run.task_id.removeprefix("touch-")
            if run.commands and run.commands[0] in (f"touch {c}" for c in LETTERS):
                assert run.reward == (1.0 if run.commands[0] == f"touch {letter}" else 0.5)
            rewards.add(run.reward)
        assert rewards >= {0.5, 1.0}
        after = trainer.served.state()
        learned = trainer.learner.policy.model.state_dict()
        assert max(float((after[k] - before[k]).abs().max()) for k in after) > 1e-4
        assert all(torch.equal(after[k], learned[k].cpu()) for k in after)

        trainer.agent = SimpleShellAgent(max_turns=2, max_tokens=12)
        row = trainer.step(1)
        assert row["failed"] == 0, row["errors"]
        assert row["logprob_gap"] < 1e-4  # sampled by the weights pushed after step 0
        two = [r for r in trainer.runs if r.trace is not None and len(r.trace.turns) == 2]
        assert two, [r.commands for r in trainer.runs]
        for run in two:
            assert run.trace is not None
            first, second = run.trace.turns
            (episode,) = run.rows
            assert episode.turns == 2
            assert episode.tokens == second.prompt_token_ids + second.completion_token_ids
            n = len(first.prompt_token_ids) + len(first.completion_token_ids)
            assert episode.tokens[:n] == first.prompt_token_ids + first.completion_token_ids
            between = len(second.prompt_token_ids) - n  # the command's output: trained on nothing
            assert between > 0
            assert episode.mask[n : n + between] == [0] * between
            assert sum(episode.mask) == len(first.completion_token_ids) + len(second.completion_token_ids)


def _turn(node: str, prompt: list[int], completion: list[int]) -> TrainingTurn:
    return TrainingTurn(
        node_id=node,
        prompt_token_ids=prompt,
        completion_token_ids=completion,
        per_token_logps=[-0.5 - i for i in range(len(completion))],
        loss_mask=[0] * len(prompt) + [1] * len(completion),
    )


def test_trace_episodes_continue_by_prefix_and_branch_otherwise() -> None:
    trace = TrainingTrace(
        turns=[
            _turn("a", [1, 2], [3, 4]),
            _turn("b", [1, 2, 3, 4, 9], [5]),  # continues a: 9 is the tool's output
            _turn("c", [7, 2], [8]),  # an edited history: a row of its own
        ]
    )
    first, other = trace_episodes(trace, group=3, session="s", version=2)
    assert first.tokens == [1, 2, 3, 4, 9, 5]
    assert first.mask == [0, 0, 1, 1, 0, 1]
    assert first.logprobs == [0.0, 0.0, -0.5, -1.5, 0.0, -0.5]
    assert first.turns == 2
    assert first.versions == [-1, -1, 2, 2, -1, 2]
    assert first.group == 3
    assert other.tokens == [7, 2, 8]
    assert other.mask == [0, 0, 1]


def test_cli_agent_without_a_task_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["train", "--agent", "simple", "--env", "http://127.0.0.1:9", "--model", "tiny"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "--task" in err, err


def test_cli_task_without_agent_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["train", "--env", "http://127.0.0.1:9", "--task", "touch-a"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "--agent" in err, err
