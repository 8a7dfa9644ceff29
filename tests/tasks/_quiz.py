"""A quiz env with a task set, and helpers that write small task files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from openenv import Action, Environment, Execution, Observation, State
from openenv.tasks import Task, TaskOptions, TaskSet


def rows(split: str, n: int) -> list[dict[str, Any]]:
    return [{"id": f"{split}-{i}", "question": f"{split} q{i}", "answer": i * 10} for i in range(n)]


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in items))
    return path


def write_folder(folder: Path, sizes: dict[str, int]) -> Path:
    for split, n in sizes.items():
        write_jsonl(folder / f"{split}.jsonl", rows(split, n))
    return folder


class Answer(Action):
    answer: int


class Question(Observation):
    task_id: str = ""
    split: str = ""
    index: int = -1
    question: str = ""


class QuizEnv(Environment[Answer, Question, State]):
    """Answer the question of the task picked at reset."""

    execution = Execution.INLINE
    reset_options_model = TaskOptions
    task_set: ClassVar[TaskSet]

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None
    ) -> Question:
        self.task: Task = self.task_set.pick(options, seed=seed)
        self._state = State(episode_id=episode_id)
        t = self.task
        return Question(task_id=t.id, split=t.split, index=t.index, question=t.data["question"])

    def step(self, action: Answer) -> Question:
        self._state.step_count += 1
        ok = action.answer == self.task.data["answer"]
        return Question(task_id=self.task.id, reward=1.0 if ok else 0.0, done=True)

    def state(self) -> State:
        return self._state


def quiz_env(task_set: TaskSet, name: str = "QuizEnv") -> type[QuizEnv]:
    """A QuizEnv subclass with its own task set (one per test)."""
    return type(name, (QuizEnv,), {"task_set": task_set, "env_name": name})
