"""``VerifiersEnv``: a verifiers taskset served as a text env (RFC 0002).

One episode is one task: the reset shows its prompt, the one step takes the model's
completion and ends the episode with the reward the task's own rubric gives it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from .._env import AsyncEnvironment
from ._models import VerifiersAction, VerifiersObservation, VerifiersOptions, VerifiersState
from ._score import as_chat, folded, prompt_messages, score
from ._taskset import VerifiersTaskSet


class VerifiersEnv(AsyncEnvironment[VerifiersAction, VerifiersObservation, VerifiersState]):
    """Answer one task of a verifiers taskset; the reward is the task's own rubric.

    Subclass with a ``task_set`` (``openenv import`` writes one), or let ``env_class``
    make the subclass (``openenv serve verifiers:MODULE``). Reset options choose the task
    (``VerifiersOptions``: ``task_id``, ``index``, ``split``; else the reset seed).
    """

    task_set: ClassVar[VerifiersTaskSet | None] = None
    reset_options_model = VerifiersOptions

    def __init__(self) -> None:
        if self.task_set is None:
            raise TypeError(f"{type(self).__name__} has no task_set: give it a VerifiersTaskSet")
        self._tasks: VerifiersTaskSet = self.task_set
        self._task: Any = None
        self._state = VerifiersState()

    async def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Any = None,
    ) -> VerifiersObservation:
        picked = self._tasks.pick(options, seed=seed)
        self._task = self._tasks.verifiers_task(picked.split, picked.index)
        self._state = VerifiersState(
            episode_id=episode_id or uuid.uuid4().hex,
            task_id=picked.id,
            split=picked.split,
            index=picked.index,
        )
        messages = as_chat(prompt_messages(self._task.data))
        return VerifiersObservation(prompt=folded(messages), messages=messages, task_id=picked.id)

    async def step(self, action: VerifiersAction) -> VerifiersObservation:
        if self._task is None or self._state.answered:
            raise ValueError("the episode is over: reset to start another")
        scored = await score(self._task, action.completion)
        self._state.step_count += 1
        self._state.answered = True
        self._state.reward = scored.reward
        return VerifiersObservation(
            task_id=self._state.task_id,
            reward=scored.reward,
            done=True,
            metadata={"rewards": scored.rewards, "metrics": scored.metrics},
        )

    async def state(self) -> VerifiersState:
        return self._state.model_copy()


def env_class(
    taskset: str,
    *,
    config: Mapping[str, Any] | None = None,
    splits: Mapping[str, Mapping[str, Any]] | None = None,
    limit: int | None = None,
) -> type[VerifiersEnv]:
    """A ``VerifiersEnv`` subclass serving verifiers taskset ``taskset`` (its tasks loaded
    now: an unknown module, one without a ``vf.Taskset``, a bad config or a task that
    needs a runtime is ``EnvNotFound`` or ``EnvKwargsError`` here, in one line)."""
    tasks = VerifiersTaskSet(taskset, config=config, splits=splits, limit=limit).load()
    stem = "".join(part.title() for part in re.split(r"[^A-Za-z0-9]+", taskset.rsplit(".", 1)[-1]) if part)
    cls = type(f"{stem or 'Verifiers'}Env", (VerifiersEnv,), {
        "__doc__": f"The verifiers taskset {taskset!r}: one task per episode, scored by its own rubric.",
        "__module__": __name__,
        "task_set": tasks,
        "env_name": taskset,
    })
    return cls
