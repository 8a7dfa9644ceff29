"""``synthetic_episodes``: a batch of made-up episodes, for measuring ``update`` alone.

A learner's step does not care where its episodes came from: this builds ``n`` of them
from a seeded generator (random prompt and sampled token ids, sampler logprobs in
``[-4, -0.5)``), so a benchmark or a test can time or check the update without an env
or a sampler. The shapes are the caller's: prompt and sampled lengths are drawn from
inclusive ranges.
"""

from __future__ import annotations

import random

from ._rollout import Episode


def synthetic_episodes(
    n: int,
    vocab: int,
    *,
    group_size: int = 8,
    prompt_tokens: tuple[int, int] = (24, 48),
    sampled_tokens: tuple[int, int] = (32, 32),
    seed: int = 0,
) -> list[Episode]:
    """``n`` episodes of token ids in ``[4, vocab)`` (0-3 left to special tokens), in groups
    of ``group_size``; every sampled token is trained on and carries policy version 0."""
    if n < 0 or vocab <= 4 or group_size < 1:
        raise ValueError("synthetic_episodes needs n >= 0, vocab > 4 and group_size >= 1")
    rng = random.Random(seed)
    out = []
    for i in range(n):
        prompt = [rng.randrange(4, vocab) for _ in range(rng.randint(*prompt_tokens))]
        sampled = [rng.randrange(4, vocab) for _ in range(rng.randint(*sampled_tokens))]
        out.append(
            Episode(
                group=i // group_size,
                seed=i,
                session=f"s{i}",
                tokens=prompt + sampled,
                mask=[0] * len(prompt) + [1] * len(sampled),
                logprobs=[0.0] * len(prompt) + [rng.uniform(-4.0, -0.5) for _ in sampled],
                versions=[-1] * len(prompt) + [0] * len(sampled),
            )
        )
    return out
