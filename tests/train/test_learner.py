"""``update``: one optimizer step, the same whatever the micro-batch, fixed or ``"auto"``."""

from __future__ import annotations

import copy
import math
import random
from typing import Any, Literal

import pytest
import torch

from openenv.train import TrainConfig, _learner, load_policy, synthetic_episodes
from openenv.train._learner import Learner, update
from openenv.train._model import hidden_and_head
from openenv.train._rollout import Episode


def _episodes(n: int, vocab: int) -> list[Episode]:
    return synthetic_episodes(n, vocab, group_size=4, prompt_tokens=(2, 5), sampled_tokens=(1, 4))


@pytest.mark.parametrize("kl_beta", [0.0, 0.1])
def test_the_step_and_its_metrics_do_not_depend_on_the_micro_batch(kl_beta: float) -> None:
    policy = load_policy("tiny", seed=0)
    episodes = _episodes(10, policy.renderer.vocab_size)
    adv = [random.Random(i).uniform(-1, 1) for i in range(len(episodes))]
    results = {}
    for micro in (3, 64):  # 4 passes (3+3+3+1), then one
        cfg = TrainConfig(env=["http://127.0.0.1:9"], micro_batch=micro, kl_beta=kl_beta)
        p = copy.deepcopy(policy)
        ref = copy.deepcopy(policy.model).eval() if kl_beta else None
        opt = torch.optim.SGD(p.model.parameters(), lr=0.1)
        metrics = update(cfg, p, ref, opt, episodes, adv, torch.device("cpu"))
        results[micro] = (metrics, [t.detach().clone() for t in p.model.parameters()])
    (small, w_small), (whole, w_whole) = results[3], results[64]
    assert small.keys() == whole.keys()
    for key in small:
        if key == "kl" and not kl_beta:
            assert math.isnan(small[key])
            assert math.isnan(whole[key])
            continue
        assert small[key] == pytest.approx(whole[key], rel=1e-4, abs=1e-6), key
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(w_small, w_whole, strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(w_whole, policy.model.parameters(), strict=True))


class _OomAbove:
    """Test double for running out of GPU memory: wraps the learner's forward and raises
    ``torch.OutOfMemoryError`` when a pass holds more than ``k`` episodes, and at the call
    numbers in ``fail_calls`` (1-based), as a GPU would. Records each pass's batch size."""

    def __init__(self, k: int, fail_calls: tuple[int, ...] = ()) -> None:
        self.k, self.fail_calls, self.calls = k, fail_calls, 0
        self.sizes: list[int] = []
        self.real = hidden_and_head

    def __call__(self, policy: Any, ids: torch.Tensor, attn: torch.Tensor) -> Any:
        self.calls += 1
        self.sizes.append(ids.shape[0])
        if ids.shape[0] > self.k or self.calls in self.fail_calls:
            raise torch.OutOfMemoryError(f"test double: {ids.shape[0]} episodes > {self.k}")
        return self.real(policy, ids, attn)


def _learners(*micro: int | Literal["auto"] | None) -> list[Learner]:
    return [Learner(TrainConfig(env=["http://127.0.0.1:9"], micro_batch=m, seed=0)) for m in micro]


@pytest.mark.parametrize(
    ("k", "fail_calls", "sizes"),
    [
        (3, (), [12, 6, 3, 3, 3, 3]),
        # at 6 the first pass runs backward and the second fails: its gradients must
        # not reach the step
        (6, (3,), [12, 6, 6, 3, 3, 3, 3]),
    ],
)
def test_auto_micro_batch_halves_until_it_fits_keeps_the_size_and_equals_that_fixed_size(
    monkeypatch: pytest.MonkeyPatch, k: int, fail_calls: tuple[int, ...], sizes: list[int]
) -> None:
    auto, fixed = _learners("auto", 3)
    episodes = _episodes(12, auto.policy.renderer.vocab_size)
    adv = [random.Random(i).uniform(-1, 1) for i in range(len(episodes))]
    oom = _OomAbove(k, fail_calls)
    monkeypatch.setattr(_learner, "hidden_and_head", oom)
    first = auto.update(episodes, adv)
    assert oom.sizes == sizes
    assert first["micro_batch"] == 3
    assert auto.micro_batch == 3
    oom.sizes.clear()
    second = auto.update(episodes, adv)
    assert oom.sizes == [3, 3, 3, 3]  # the size that fit is kept, not retried from 12
    assert "micro_batch" not in second  # logged once, in the row of the step that found it
    monkeypatch.setattr(_learner, "hidden_and_head", oom.real)
    rows = [fixed.update(episodes, adv) for _ in range(2)]
    assert "micro_batch" not in rows[0]
    for got, want in ((first, rows[0]), (second, rows[1])):
        assert got["loss"] == pytest.approx(want["loss"], rel=1e-5, abs=1e-7)
    pairs = zip(auto.policy.model.parameters(), fixed.policy.model.parameters(), strict=True)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in pairs)


def test_auto_micro_batch_on_cpu_is_the_whole_step_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    (auto,) = _learners("auto")
    episodes = _episodes(10, auto.policy.renderer.vocab_size)
    oom = _OomAbove(100)
    monkeypatch.setattr(_learner, "hidden_and_head", oom)
    assert auto.update(episodes, [0.5] * 5 + [-0.5] * 5)["micro_batch"] == 10
    assert auto.update(episodes, [0.5] * 5 + [-0.5] * 5).get("micro_batch") is None
    assert oom.sizes == [10, 10]
    assert auto.micro_batch is None  # nothing forced it down: each step tries all its episodes


def test_auto_micro_batch_that_fails_at_one_episode_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    (auto,) = _learners("auto")
    episodes = _episodes(12, auto.policy.renderer.vocab_size)
    oom = _OomAbove(0)
    monkeypatch.setattr(_learner, "hidden_and_head", oom)
    with pytest.raises(torch.OutOfMemoryError, match="micro_batch='auto': one episode per forward"):
        auto.update(episodes, [1.0] * 12)
    assert oom.sizes == [12, 6, 3, 1]


def test_micro_batch_config_takes_auto_and_refuses_other_words_and_zero() -> None:
    assert TrainConfig.from_dict({"env": "http://127.0.0.1:9", "micro_batch": "auto"}).micro_batch == "auto"
    for bad in ("bad", 0, -3, 2.5, True):
        with pytest.raises(ValueError, match="micro_batch must be 'auto' or an integer") as info:
            TrainConfig.from_dict({"env": "http://127.0.0.1:9", "micro_batch": bad})
        assert "\n" not in str(info.value)


def test_the_default_micro_batch_is_auto_on_cuda_and_64_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    assert TrainConfig(env=["http://127.0.0.1:9"], device="cuda").micro_batch_mode == "auto"
    assert TrainConfig(env=["http://127.0.0.1:9"], device="cuda", micro_batch=8).micro_batch_mode == 8
    (default,) = _learners(None)
    assert default.cfg.micro_batch_mode == 64
    episodes = _episodes(70, default.policy.renderer.vocab_size)
    recorder = _OomAbove(1000)  # never raises here: records each pass's size
    monkeypatch.setattr(_learner, "hidden_and_head", recorder)
    assert "micro_batch" not in default.update(episodes, [0.5] * 35 + [-0.5] * 35)
    assert recorder.sizes == [64, 6]
