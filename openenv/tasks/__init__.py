"""Tasks from datasets: an env declares a ``TaskSet`` once and picks a task at reset.

Needs the ``tasks`` extra (``pip install 'openenv[tasks]'``, which pulls ``datasets``)
when a task set is first loaded; importing this package does not load ``datasets``::

    from openenv import Environment, State
    from openenv.tasks import TaskOptions, TaskSet

    class QuizEnv(Environment[Answer, Question, State]):
        task_set = TaskSet("data/quiz")          # a folder: train.jsonl, test.jsonl
        reset_options_model = TaskOptions        # reset(task_id=..., index=..., split=...)

        def reset(self, *, seed=None, episode_id=None, options=None):
            self.task = self.task_set.pick(options, seed=seed)   # same seed, same task
            return Question(text=self.task.data["question"])

A server whose env class has a ``task_set`` loads it at startup and serves upstream's
Task API routes (``/{env_name}/splits``, ``/tasks``, ``/num_tasks``, ``/task``,
``/task_range``). An unknown task id, index or split raises ``TaskNotFound``
(``TASK_NOT_FOUND``, HTTP 404).
"""

from .._exceptions import TaskNotFound
from ._rows import Rows
from ._taskset import Task, TaskOptions, TaskSet

__all__ = ["Rows", "Task", "TaskNotFound", "TaskOptions", "TaskSet"]
