"""``CollectRunner``: many white-box rollouts into a JSONL dataset, resumable, optionally filtered.

Episode ids are ``{prefix}-{index:06d}``; ids already in ``results.jsonl`` are skipped
(the file is the resume state, the runner keeps none). An episode that raises is
counted as failed and logged; the run goes on.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .._adapters import HarnessAdapter
from .._session import ResourceSessionFactory
from .._types import HarnessRunLimits, ModelStep, final_state_of
from ._record import EpisodeRecord, RolloutSerializer

__all__ = ["CollectResult", "CollectRunner"]

log = logging.getLogger(__name__)


@dataclass
class CollectResult:
    """What one ``run`` did: counts, the planned ids, and the kept episodes' rewards."""

    num_collected: int
    num_skipped: int
    num_dropped: int
    num_failed: int
    episode_ids: list[str]
    avg_reward: float
    success_rate: float


class CollectRunner:
    """Runs episodes from ``session_factory`` through ``harness_adapter`` into ``serializer``.

    ``tasks``, when given, are handed out one per planned episode (skipped ones too, so
    a resumed run gives each episode the same task); ``None`` once they run out.
    """

    def __init__(
        self,
        *,
        session_factory: ResourceSessionFactory[Any],
        harness_adapter: HarnessAdapter,
        serializer: RolloutSerializer,
        tasks: Iterable[Any] | None = None,
        limits: HarnessRunLimits | None = None,
    ) -> None:
        self._factory = session_factory
        self._adapter = harness_adapter
        self._serializer = serializer
        self._tasks: Iterator[Any] | None = None if tasks is None else iter(tasks)
        self._limits = limits

    def run(
        self,
        *,
        model_step: ModelStep,
        num_episodes: int,
        episode_id_prefix: str = "ep",
        resume: bool = True,
        should_keep: Callable[[EpisodeRecord], bool] | None = None,
    ) -> CollectResult:
        """Collect ``num_episodes`` episodes; ``resume=False`` first moves an existing file aside."""
        planned = [f"{episode_id_prefix}-{i:06d}" for i in range(num_episodes)]
        if not resume:
            self._move_results_aside()
        done_before = self._serializer.collected_episode_ids() if resume else set()
        skipped = dropped = failed = 0
        rewards: list[float] = []
        for episode_id in planned:
            task = next(self._tasks, None) if self._tasks is not None else None
            if episode_id in done_before:
                skipped += 1
                continue
            record = self._episode(model_step, episode_id, task)
            if record is None:
                failed += 1
            elif should_keep is not None and not should_keep(record):
                dropped += 1
            else:
                self._serializer.write_episode(record)
                rewards.append(record.reward)
        return CollectResult(
            num_collected=len(rewards),
            num_skipped=skipped,
            num_dropped=dropped,
            num_failed=failed,
            episode_ids=planned,
            avg_reward=sum(rewards) / len(rewards) if rewards else 0.0,
            success_rate=sum(r > 0 for r in rewards) / len(rewards) if rewards else 0.0,
        )

    def _episode(self, model_step: ModelStep, episode_id: str, task: Any) -> EpisodeRecord | None:
        session = None
        try:
            session = self._factory.create(task=task, episode_id=episode_id)
            rollout = self._adapter.run_white_box(model_step=model_step, session=session, limits=self._limits)
            verify = session.verify(transcript=rollout.messages, final_state=final_state_of(rollout))
            return EpisodeRecord.from_rollout(
                episode_id=episode_id, rollout=rollout, verify=verify, task=task
            )
        except Exception:
            log.exception("episode %s failed", episode_id)
            return None
        finally:
            if session is not None:
                session.close()

    def _move_results_aside(self) -> None:
        path = self._serializer.results_path
        if not path.exists():
            return
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        backup = path.with_name(f"{path.stem}.{stamp}.bak{path.suffix}")
        n = 0
        while backup.exists():
            n += 1
            backup = path.with_name(f"{path.stem}.{stamp}.{n}.bak{path.suffix}")
        path.replace(backup)
        warnings.warn(f"resume=False moved existing results file to {backup}", RuntimeWarning, stacklevel=3)
