"""``HarborEnv``: a client of a served terminal env under upstream's Harbor names.

Discovery is the env's Task API; ``run_rollout`` plays one task with one of our
policies (``harness``: ``oracle``, ``openai``, ``module:Class``...) through ``openenv
eval`` and returns its ``HarborRolloutResult`` (``terminal_env._rollout``). Upstream's
``sandbox``, ``llm_url`` and capture arguments have no counterpart: the env's own
container or sandbox runs the task, and the policy names its model.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from .._aio import run_sync
from .models import HarborRolloutResult, HarborTaskRef

_rollout: Any = importlib.import_module("terminal_env._rollout")


@dataclass
class HarborEnv:
    """A served terminal env (``base_url``, e.g. ``http://127.0.0.1:8000``)."""

    base_url: str
    message_timeout_s: float = 1800.0

    def __enter__(self) -> HarborEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        """Nothing held between calls."""

    def splits(self) -> list[dict[str, Any]]:
        """The env's splits, each with ``num_tasks``."""
        return list(_rollout.splits(self.base_url))

    def num_tasks(self, split: str = "") -> int:
        return int(_rollout.num_tasks(self.base_url, split))

    def get_task(self, split: str, index: int) -> HarborTaskRef:
        return HarborTaskRef.model_validate(_rollout.task_ref(self.base_url, split, index))

    def get_task_range(self, split: str, start: int = 0, stop: int = 20) -> list[HarborTaskRef]:
        return [HarborTaskRef(**t) for t in _rollout.task_refs(self.base_url, split, start, stop)]

    def run_rollout(
        self,
        *,
        split: str = "",
        task_index: int = 0,
        harness: str = "oracle",
        agent_timeout_sec: float = 0.0,
        agent_step_limit: int = 0,
        **_upstream_only: Any,
    ) -> HarborRolloutResult:
        """Play one task and return its result (the env's reward and named rewards)."""
        return HarborRolloutResult.model_validate(
            run_sync(
                _rollout.run_rollout(
                    self.base_url,
                    split=split,
                    task_index=task_index,
                    harness=harness,
                    max_turns=agent_step_limit or 30,
                    agent_timeout_sec=agent_timeout_sec,
                ),
                in_thread=True,
            )
        )
