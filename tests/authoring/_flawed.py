"""Env folders with one flaw each, for ``openenv validate --level``.

``make_env(tmp_path, source, manifest_extra)`` writes a folder ``openenv serve`` can
serve (pyproject entry point, openenv.yaml with a validation: block, Dockerfile,
README) around ``source``, a module defining ``Env``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

BLOCK = """\
validation:
  reward:
    range: [0.0, 1.0]
    floor_margin: 0.1
  resources:
    cpu: 1.0
    memory_mb: 2048
    disk_mb: 256
    episode_timeout_s: 60
  capabilities:
    verifier:
      kind: reward_channel
  types:
    tags: [test]
"""

HEADER = """\
import random, subprocess, sys, uuid
from pathlib import Path
from typing import Any
from openenv import Action, Environment, Execution, Observation, State


class TextAction(Action):
    message: str


class TextObservation(Observation):
    text: str = ""


class _Base(Environment[TextAction, TextObservation, State]):
    execution = Execution.INLINE

    def __init__(self) -> None:
        self._state = State()

    def reset(self, *, seed=None, episode_id=None, options=None) -> TextObservation:
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        return TextObservation(text="say something", reward=0.0)

    def state(self) -> State:
        return self._state.model_copy()
"""

#: Rewards 2.0 a step, where the manifest declares [0, 1].
OUT_OF_RANGE = (
    HEADER
    + """
class Env(_Base):
    def step(self, action: TextAction) -> TextObservation:
        self._state.step_count += 1
        return TextObservation(text=action.message, reward=2.0 if action.message else 0.5)
"""
)

#: Full reward for any answer, the empty one too: the null policy passes.
NULL_PASSES = (
    HEADER
    + """
class Env(_Base):
    def step(self, action: TextAction) -> TextObservation:
        self._state.step_count += 1
        return TextObservation(text="correct!", reward=1.0, done=True)
"""
)

#: Rewards at random whatever the seed, yet claims determinism.
NOISY = (
    HEADER
    + """
class Env(_Base):
    def step(self, action: TextAction) -> TextObservation:
        self._state.step_count += 1
        return TextObservation(text=action.message, reward=random.random() * 0.5)
"""
)

_TASKS = """\
import ast, os, subprocess, sys, tempfile, uuid
from pathlib import Path
from typing import Literal
from openenv import Action, Environment, Execution, Observation, State
from openenv.tasks import Rows, TaskOptions, TaskSet


class RowTasks(TaskSet):
    # the rows given, as the split "train"

    def __init__(self, name, rows) -> None:
        super().__init__(name, default_split="train")
        self._rows = rows

    def _read(self):
        return {"train": Rows(self._rows)}
"""

#: The start of each coding env here: imports, ``RowTasks`` (a Task API of the rows
#: given), the action that runs Python (``code`` + ``submit``) with its observation, and
#: ``TaskCodeEnv``, the base of an env over such tasks.
CODE_HEADER = (
    _TASKS
    + """

class CodeAction(Action):
    code: str = ""
    submit: bool = False


class CodeObservation(Observation):
    output: str = ""


class TaskCodeEnv(Environment[CodeAction, CodeObservation, State]):
    # resets to a task of task_set (a RowTasks) and shows its prompt; a subclass grades
    execution = Execution.INLINE
    reset_options_model = TaskOptions

    def __init__(self) -> None:
        self._state = State()
        self._task = {}

    def reset(self, *, seed=None, episode_id=None, options=None) -> CodeObservation:
        self._task = self.task_set.pick(options, seed=seed).data
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        return CodeObservation(output=self._task["prompt"], reward=0.0)

    def state(self) -> State:
        return self._state.model_copy()
"""
)

#: The same for a shell env: the action runs commands (``run``) or submits.
SHELL_HEADER = (
    _TASKS
    + """

class ShellAction(Action):
    type: Literal["run", "submit"] = "run"
    command: str = ""
    timeout_s: float = 30.0


class ShellObservation(Observation):
    output: str = ""
"""
)

#: A coding env whose grader the submission can reach: ``==`` on the submission's own
#: object, the exit status of the process the code runs in, and a reward file in the
#: folder the code runs in.
HACKABLE = (
    CODE_HEADER
    + """
TEST = "\\nassert solve(3) == 6\\n"


class Env(Environment[CodeAction, CodeObservation, State]):
    execution = Execution.INLINE

    def __init__(self) -> None:
        self._state = State()
        self._work = Path(tempfile.mkdtemp(prefix="hackable-"))

    def reset(self, *, seed=None, episode_id=None, options=None) -> CodeObservation:
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        return CodeObservation(output="write solve(x) returning twice x", reward=0.0)

    def _run(self, code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code], cwd=self._work, capture_output=True,
                              text=True, timeout=20)

    def step(self, action: CodeAction) -> CodeObservation:
        self._state.step_count += 1
        if not action.submit:
            done = self._run(action.code)
            return CodeObservation(output=done.stdout[-500:], reward=0.0)
        done = self._run(action.code + TEST)
        reward = 1.0 if done.returncode == 0 else 0.0
        forged = self._work / "reward.txt"
        if forged.is_file():  # the flaw: a file the submission can write
            reward = max(reward, float(forged.read_text().strip() or 0))
            forged.unlink()
        return CodeObservation(output=done.stdout[-500:], reward=reward, done=True)

    def state(self) -> State:
        return self._state.model_copy()
"""
)


#: A shell env whose grader trusts a file the agent's commands can write.
HACKABLE_SHELL = (
    SHELL_HEADER
    + """
class Env(Environment[ShellAction, ShellObservation, State]):
    execution = Execution.INLINE

    def __init__(self) -> None:
        self._state = State()
        self._work = Path(tempfile.mkdtemp(prefix="hackable-shell-"))

    def reset(self, *, seed=None, episode_id=None, options=None) -> ShellObservation:
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        return ShellObservation(output="write 42 into answer.txt", reward=0.0)

    def step(self, action: ShellAction) -> ShellObservation:
        self._state.step_count += 1
        if action.type == "run":
            done = subprocess.run(["bash", "-c", action.command], cwd=self._work, capture_output=True,
                                  text=True, timeout=min(action.timeout_s, 30))
            return ShellObservation(output=done.stdout[-500:], reward=0.0)
        answer = self._work / "answer.txt"
        reward = 1.0 if answer.is_file() and answer.read_text().strip() == "42" else 0.0
        if (self._work / "reward.txt").is_file():  # the flaw
            reward = 1.0
        return ShellObservation(output="graded", reward=reward, done=True)

    def state(self) -> State:
        return self._state.model_copy()
"""
)


def make_env(root: Path, source: str, *, deterministic: bool = False, block: str = BLOCK) -> Path:
    folder = root / "flawed_env"
    package = folder / "flawed_env"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(source)
    (folder / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [project]
        name = "flawed-env"
        version = "0.1.0"
        dependencies = ["openenv"]

        [project.entry-points."openenv.envs"]
        flawed_env = "flawed_env:Env"
        """)
    )
    (folder / "openenv.yaml").write_text(
        f"spec_version: 1\nname: flawed_env\ndeterministic: {str(deterministic).lower()}\n" + block
    )
    (folder / "Dockerfile").write_text("FROM python:3.11-slim\n")
    (folder / "README.md").write_text("# flawed_env\n")
    return folder


#: A quiz with a Task API; its fourth task expects the empty answer, so doing nothing
#: passes it (a leaky task). SEMANTIC plays only the first three tasks and misses it.
LEAKY = """\
import uuid
from openenv import Action, Environment, Execution, Observation, State
from openenv.tasks import Rows, TaskOptions, TaskSet


class TextAction(Action):
    message: str


class TextObservation(Observation):
    text: str = ""


QUIZ = [
    {"id": "add", "question": "2+2?", "answer": "4"},
    {"id": "mul", "question": "2*3?", "answer": "6"},
    {"id": "sub", "question": "9-2?", "answer": "7"},
    {"id": "blank", "question": "what is left of 'abc' after removing 'abc'?", "answer": ""},
    {"id": "div", "question": "8/2?", "answer": "4"},
]


class Quiz(TaskSet):
    def __init__(self) -> None:
        super().__init__("quiz", default_split="test")

    def _read(self):
        return {"test": Rows([{**row, "solution": row["answer"]} for row in QUIZ])}


class Env(Environment[TextAction, TextObservation, State]):
    execution = Execution.INLINE
    task_set = Quiz()
    reset_options_model = TaskOptions

    def __init__(self) -> None:
        self._state = State()
        self._answer = ""

    def reset(self, *, seed=None, episode_id=None, options=None) -> TextObservation:
        task = self.task_set.pick(options, seed=seed)
        self._answer = task.data["answer"]
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        return TextObservation(text=task.data["question"], reward=0.0)

    def step(self, action: TextAction) -> TextObservation:
        self._state.step_count += 1
        reward = 1.0 if action.message.strip() == self._answer else 0.0
        return TextObservation(text="graded", reward=reward, done=True)

    def state(self) -> State:
        return self._state.model_copy()
"""


#: A text env (its actions run no code) whose grader can be forged without knowing the
#: answer, one way per text probe: a list of guesses is taken, an answer that contains
#: the expected one scores, the reset's metadata shows the answer, steps after the end
#: still pay, the empty answer earns 0.5 (a canary above the floor), and the expected
#: answer it names at the end ("seven") is not what it grades as right (oracle_max).
FORGEABLE = """\
import uuid
from openenv import Action, Environment, Execution, Observation, State


class TextAction(Action):
    message: str | list[str] = ""


class TextObservation(Observation):
    text: str = ""


class Env(Environment[TextAction, TextObservation, State]):
    execution = Execution.INLINE

    def __init__(self) -> None:
        self._state = State()
        self._done = False

    def reset(self, *, seed=None, episode_id=None, options=None) -> TextObservation:
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        self._done = False
        return TextObservation(text="what is 3+4?", reward=0.0, metadata={"hint": "7"})

    def step(self, action: TextAction) -> TextObservation:
        self._state.step_count += 1
        if self._done:
            return TextObservation(text="again", reward=1.0, done=True)
        self._done = True
        given = action.message
        if isinstance(given, list):
            reward = float("7" in given)
        elif given == "":
            reward = 0.5
        else:
            reward = float("7" in given)
        return TextObservation(text="graded", reward=reward, done=True, metadata={"expected": "seven"})

    def state(self) -> State:
        return self._state.model_copy()
"""
