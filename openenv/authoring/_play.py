"""Play a policy on a served env through ``openenv.eval`` and read back its
trajectories: what the SEMANTIC and STATISTICAL levels (and the replay on a second
server) judge.

The env's session limit is honoured: a server that says how many sessions it has free
(``GET /sessions``: ours) is played at no more than that many at once (a quarter kept
back, as ``openenv serve``'s per-client quota does); one that does not (upstream's,
whose template env serves one session) and refuses an episode for capacity
(``CapacityReached``, 429/503) has those episodes played again one at a time, after a
backoff.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from ._probe import http

#: Rounds of playing again, one at a time, the episodes refused for capacity, each
#: after a longer pause (0.2 s, 0.4 s, ...: 3 s in all at most).
_CAPACITY_ROUNDS = 5
_BACKOFF_S = 0.2


def free_sessions(url: str, headers: dict[str, str] | None = None) -> int | None:
    """How many sessions this client may open now (``GET /sessions``), None when the
    server does not say."""
    try:
        reply = http("GET", f"{url}/sessions", timeout_s=5.0, headers=headers)
        body = reply.json() if reply.status == 200 else None
    except Exception:
        return None
    if not isinstance(body, dict):
        return None
    most, active = body.get("max_sessions"), body.get("active_sessions")
    if not isinstance(most, int) or not isinstance(active, int) or most < 1:
        return None
    return max(1, min(most - most // 4, most - active))


def _refused_for_capacity(t: Any) -> bool:
    error = str(t.error or "")
    return t.status == "error" and not t.turns and ("CapacityReached" in error or "QuotaExceeded" in error)


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
    headers: dict[str, str] | None = None,
) -> list[Any]:
    """Every trajectory of ``policy`` on the first ``count`` tasks (None: every task), or
    on the tasks ``ids`` names (``openenv.eval``), within the server's session limit."""
    free = free_sessions(url, headers)
    trajs = _run(
        url,
        policy,
        count,
        ids,
        samples,
        max_turns,
        episode_timeout_s,
        seed,
        min(concurrency, free or concurrency),
    )
    for n in range(_CAPACITY_ROUNDS):
        refused = [t for t in trajs if _refused_for_capacity(t)]
        if not refused:
            break
        time.sleep(_BACKOFF_S * (n + 1))  # a closed session's slot may be freed a moment later
        again = _run(
            url,
            policy,
            None,
            tuple(dict.fromkeys(t.task_id for t in refused)),
            samples,
            max_turns,
            episode_timeout_s,
            seed,
            1,
        )
        redone = {(t.task_id, t.sample): t for t in again}
        trajs = [redone.get((t.task_id, t.sample), t) if _refused_for_capacity(t) else t for t in trajs]
    return trajs


def _run(
    url: str,
    policy: str,
    count: int | None,
    ids: tuple[str, ...],
    samples: int,
    max_turns: int,
    episode_timeout_s: float,
    seed: int,
    concurrency: int,
) -> list[Any]:
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
