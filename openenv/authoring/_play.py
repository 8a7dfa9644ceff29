"""Play a policy on a served env through ``openenv.eval`` and read back its
trajectories: what the SEMANTIC and STATISTICAL levels (and the replay on a second
server) judge."""

from __future__ import annotations

import tempfile
from typing import Any


def play(
    url: str,
    policy: str,
    *,
    count: int | None,
    ids: tuple[str, ...] = (),
    samples: int = 1,
    max_turns: int = 30,
    episode_timeout_s: float = 600.0,
    seed: int = 0,
    concurrency: int = 2,
) -> list[Any]:
    """Every trajectory of ``policy`` on the first ``count`` tasks (None: every task), or
    on the tasks ``ids`` names (``openenv.eval``)."""
    from ..eval import EvalConfig, load_trajectories, run_eval

    with tempfile.TemporaryDirectory(prefix="openenv-validate-") as out:
        cfg = EvalConfig(
            env=url,
            policy=policy,
            out=out,
            count=count,
            ids=ids,
            samples=samples,
            concurrency=concurrency,
            max_turns=max_turns,
            episode_timeout_s=episode_timeout_s,
            retries=0,
            seed=seed,
        )
        run_eval(cfg)
        return load_trajectories(out)
