"""Tasks from a dataset: an env declares a TaskSet once and picks a task at each reset.

    python examples/tasks_quiz.py

Writes a small quiz (train.jsonl, test.jsonl) to a temporary folder, serves QuizEnv on
a free port, and resets it by task id, by split and index, and by seed; then lists the
tasks through upstream's Task API routes.
"""

from __future__ import annotations

import json
import tempfile
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

from openenv import Action, EnvClient, Environment, EnvModels, Execution, Observation, State
from openenv.server import create_app, serve_in_background
from openenv.tasks import Task, TaskNotFound, TaskOptions, TaskSet


class Answer(Action):
    answer: int


class Question(Observation):
    task_id: str = ""
    text: str = ""


class QuizEnv(Environment[Answer, Question, State]):
    """Answer an addition question."""

    execution = Execution.INLINE
    reset_options_model = TaskOptions  # reset(task_id=..., index=..., split=...)
    task_set: ClassVar[TaskSet]  # declared below, once the data exists

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None
    ) -> Question:
        self.task: Task = self.task_set.pick(options, seed=seed)  # same seed, same task
        self._state = State(episode_id=episode_id)
        return Question(task_id=self.task.id, text=self.task.data["question"])

    def step(self, action: Answer) -> Question:
        self._state.step_count += 1
        correct = action.answer == self.task.data["answer"]
        return Question(task_id=self.task.id, reward=1.0 if correct else 0.0, done=True)

    def state(self) -> State:
        return self._state


def write_quiz(folder: Path) -> None:
    for split, start in (("train", 0), ("test", 100)):
        rows = [
            {"id": f"{split}-{i}", "question": f"{start + i} + {i}", "answer": start + 2 * i}
            for i in range(5)
        ]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        write_quiz(Path(tmp))
        QuizEnv.task_set = TaskSet(tmp)  # a folder: one split per file
        server = serve_in_background(create_app(QuizEnv))
        url = server.url
        try:
            with EnvClient(url, EnvModels(Answer, Question, State)) as env:
                q = env.reset(task_id="test-3").observation
                print(f"by id:    {q.task_id}: {q.text}")
                q = env.reset(split="train", index=2).observation
                print(f"by index: {q.task_id}: {q.text}")
                first = env.reset(seed=42).observation.task_id
                q = env.reset(seed=42).observation
                print(f"by seed:  {first} then {q.task_id} (same seed, same task)")
                left, right = q.text.split(" + ")
                result = env.step(Answer(answer=int(left) + int(right)))
                print(f"answered {q.text} = {int(left) + int(right)}: reward {result.reward}")
                try:
                    env.reset(task_id="nope")
                except TaskNotFound as err:
                    print(f"unknown:  {err.code.value}: {err.message}")
            with urllib.request.urlopen(f"{url}/QuizEnv/splits") as r:
                print(f"splits:   {json.loads(r.read())}")
            body = json.dumps({"split": "test", "index": 0}).encode()
            req = urllib.request.Request(
                f"{url}/QuizEnv/task", data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(req) as r:
                print(f"task:     {json.loads(r.read())['task']}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
