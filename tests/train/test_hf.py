"""A local Hugging Face model folder: generate-based sampling, chat-template deltas, training."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from openenv.train import RolloutWorker, load_policy, train
from openenv.train._trainer import rollout_settings

from ._count_env import CountEnv2
from ._count_fixtures import small_config

pytest.importorskip("transformers", reason="Hugging Face models need transformers (the 'train' extra)")

from openenv.train._hf import random_hf_model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return random_hf_model(tmp_path_factory.mktemp("hf") / "model", hidden_size=32, layers=1, heads=2)


def test_chat_template_deltas_never_retokenise(model_dir: Path) -> None:
    r: Any = load_policy(str(model_dir)).renderer
    first = r.first("3")
    assert r.tok.decode(first) == "<|user|>3<|assistant|>"
    # after the sampled </s>, the template's "\n" and the next user turn, then the generation prompt
    assert r.tok.decode(r.next("4")) == "\n<|user|>4<|assistant|>"
    whole = r.tok.apply_chat_template(
        [
            {"role": "user", "content": "3"},
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": "4"},
        ],
        add_generation_prompt=True,
        tokenize=True,
    )
    whole = whole["input_ids"] if not isinstance(whole, list) else whole
    assert first + r.tok.encode("x", add_special_tokens=False) + list(r.stop_ids) + r.next("4") == list(whole)


async def test_multi_turn_rollout_with_generate(
    serve: Callable[..., Any], tmp_path: Path, model_dir: Path
) -> None:
    server = serve(CountEnv2, max_sessions=64)
    cfg = small_config([server.url], str(tmp_path), max_turns=2, max_new_tokens=4)
    policy = load_policy(str(model_dir))
    w = RolloutWorker(str(model_dir), [server.url], rollout_settings(cfg), seed=0, policy=policy)
    episodes = await w.rollout(0, [(0, 5)])
    assert all(e.error is None for e in episodes)
    assert all(e.turns == 2 for e in episodes)
    for e in episodes:
        ids = torch.tensor([e.tokens])
        with torch.no_grad():
            lp = torch.log_softmax(policy.logits(ids, torch.ones_like(ids))[0, :-1], -1)
        recomputed = lp.gather(1, ids[0, 1:, None]).squeeze(1)
        mask = torch.tensor(e.mask[1:], dtype=torch.bool)
        assert torch.allclose(recomputed[mask], torch.tensor(e.logprobs[1:])[mask], atol=1e-4)
    await w.close()
    server.wait_active(0)


def test_train_a_local_model_folder(serve: Callable[..., Any], tmp_path: Path, model_dir: Path) -> None:
    server = serve(CountEnv2, max_sessions=64)
    rows = train(
        small_config(
            [server.url],
            str(tmp_path),
            model=str(model_dir),
            steps=2,
            max_turns=2,
            max_new_tokens=2,
            kl_beta=0.1,
        )
    )
    assert [r["episodes"] for r in rows] == [16, 16]
    assert rows[0]["logprob_gap"] < 1e-4
    assert rows[1]["kl"] > 0  # moved away from the frozen reference after one update
