"""The tiny preset: tokenizer, model, sampler, and the device check."""

from __future__ import annotations

import pytest
import torch

from openenv.train import CharRenderer, load_policy
from openenv.train._sampler import sample
from openenv.train._trainer import pick_device


def test_char_renderer_round_trip() -> None:
    r = CharRenderer()
    assert r.decode(r.encode("What is 2+3?")) == "what is 2+3?"
    first = r.first("7")
    assert first[0] == r.bos_id
    assert first[-1] == r.turn_id
    assert r.encode("é") == [r.unk_id]
    assert r.decode([r.eos_id, *r.encode("ok"), r.pad_id]) == "ok"  # specials are dropped


def test_tiny_preset_is_seeded_and_small() -> None:
    a, b = load_policy("tiny", seed=1), load_policy("tiny", seed=1)
    for pa, pb in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert sum(p.numel() for p in a.model.parameters()) < 500_000


def test_unknown_model_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="neither the preset 'tiny' nor a local model folder"):
        load_policy("/no/such/model")


def test_sampler_logprobs_are_the_models() -> None:
    policy = load_policy("tiny", seed=0)
    r = policy.renderer
    contexts = [r.first("12"), r.first("3")]  # different lengths: left padding
    gen = torch.Generator().manual_seed(0)
    outs = sample(
        policy, contexts, max_new_tokens=5, temperature=1.0, generator=gen, device=torch.device("cpu")
    )
    for ctx, (ids, logps) in zip(contexts, outs, strict=True):
        assert 1 <= len(ids) <= 5
        assert len(ids) == len(logps)
        if len(ids) < 5:
            assert ids[-1] in r.stop_ids  # stopped on the stop token, which is kept
        # recompute each token's logprob from the unpadded sequence
        full = torch.tensor([ctx + ids])
        with torch.no_grad():
            logits = policy.logits(full, torch.ones_like(full))
        lp = torch.log_softmax(logits[0, len(ctx) - 1 : -1], -1)
        expected = lp.gather(1, torch.tensor(ids)[:, None]).squeeze(1)
        assert torch.allclose(expected, torch.tensor(logps), atol=1e-4)


def test_cuda_without_a_gpu_is_a_clear_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the error path cannot be reached")
    with pytest.raises(ValueError, match="no CUDA GPU is visible"):
        pick_device("cuda")
