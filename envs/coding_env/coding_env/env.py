"""The coding environment: a persistent, sandboxed Python worker per session."""

from __future__ import annotations

import contextlib
import gc
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field

from openenv import JSON_INTEGER, Environment, EnvironmentMetadata, Execution
from openenv.tasks import Task, TaskOptions, TaskSet

from ._grader import Grade
from ._runtime import CodingRuntime, CodingSettings, runtime
from ._worker import Reply, Worker, WorkerLost
from .models import CodeAction, CodeObservation, CodeState, ExceptionInfo

PROBLEMS = Path(__file__).with_name("data") / "problems.jsonl"

INSTRUCTIONS = (
    "\n\nRun Python with {{\"code\": \"...\"}}: cells share state like a notebook, a trailing "
    "expression's value comes back as `result`. Define `{entry}`, then send {{\"submit\": true}} "
    "to grade the cells that ran without an error (or {{\"code\": \"<solution>\", \"submit\": "
    "true}} to grade that code alone). Hidden tests decide the reward: the fraction passed."
)


class CodingResetOptions(TaskOptions):
    """Reset options: which problem (``task_id``, ``index``, ``split``; else the seed
    picks one) and an optional lower ``max_steps`` for this episode."""

    max_steps: Annotated[int, Field(ge=1), JSON_INTEGER] | None = None


def _cell_timeout(cell_timeout_s: float, step_timeout_s: float | None) -> float:
    """A cell's bound: ``cell_timeout_s``, or less under a step's deadline, ending early
    enough (up to 1 s, at most half) for the interrupted cell's answer to come by then."""
    if step_timeout_s is None:
        return cell_timeout_s
    return min(cell_timeout_s, step_timeout_s - min(1.0, step_timeout_s / 2))


class CodingMetadata(EnvironmentMetadata):
    """``/metadata`` plus the sandbox in force."""

    sandbox: dict[str, Any] = {}


class CodingEnv(Environment[CodeAction, CodeObservation, CodeState]):
    """Python in a sandboxed, persistent worker; reward from hidden tests.

    Each session owns one worker process in its own sandbox (no network, private
    workdir, rlimits). A cell past ``cell_timeout_s`` is interrupted (state kept);
    one that ignores the interrupt for ``grace_s`` is killed and the worker replaced
    (``state_lost``). ``submit`` runs the problem's hidden tests in a fresh sandbox.
    """

    env_name = "coding_env"
    env_version = "0.1.0"
    # Each session runs on a thread of its own: a cell that blocks (up to cell_timeout_s)
    # holds only its own session, never a pool that other sessions wait on.
    execution = Execution.DEDICATED_THREAD
    # It leaves nothing on that thread (no thread-local state): a closed session's thread
    # serves the next one, so new sessions start no thread (openenv/server/_threads.py).
    reuse_session_thread = True
    call_timeout_s: ClassVar[float | None] = 120.0  # a grading may take a while
    task_set: ClassVar[TaskSet] = TaskSet(str(PROBLEMS))
    reset_options_model = CodingResetOptions

    _active: ClassVar[CodingRuntime | None] = None

    @classmethod
    def process_resources(cls, **env_kwargs: Any) -> contextlib.AbstractContextManager[CodingRuntime]:
        """One warm pool and grader per server process (and the task set, loaded now)."""
        return cls._process_runtime(CodingSettings.from_kwargs(**env_kwargs))

    @classmethod
    @contextlib.contextmanager
    def _process_runtime(cls, settings: CodingSettings) -> Iterator[CodingRuntime]:
        cls.task_set.load()
        with runtime(settings) as rt:
            cls._active = rt
            # What the process made to start (modules, the app, the task set: over a
            # hundred thousand objects) lives as long as it does: out of the collector's
            # sight, a full collection scans only what came since. Each one scanned it
            # all, holding the GIL (and every session's event loop) for ~70 ms.
            gc.freeze()
            try:
                yield rt
            finally:
                cls._active = None

    @classmethod
    def health(cls) -> dict[str, Any]:
        return {"sandbox": cls._active.describe() if cls._active is not None else {}}

    @classmethod
    def metadata(cls) -> CodingMetadata:
        base = super().metadata()
        report = cls._active.describe() if cls._active is not None else {}
        return CodingMetadata(**base.model_dump(), sandbox=report)

    def __init__(self, *, resources: CodingRuntime | None = None, **env_kwargs: Any) -> None:
        self._own_runtime = resources is None
        self._runtime = resources or CodingRuntime(CodingSettings.from_kwargs(**env_kwargs))
        self.settings = self._runtime.settings
        self._worker: Worker | None = None
        self._task: Task | None = None
        self._cells: list[str] = []
        self._max_steps = self.settings.max_steps
        self._state = CodeState()

    # ---- protocol ----------------------------------------------------------------
    def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        options: CodingResetOptions | dict[str, Any] | None = None,
    ) -> CodeObservation:
        opts = options if isinstance(options, CodingResetOptions) else CodingResetOptions(**(options or {}))
        task = self.task_set.pick(opts, seed=seed)
        self._retire_worker()
        self._worker = self._runtime.pool.acquire()
        self._task = task
        self._cells = []
        self._max_steps = min(opts.max_steps or self.settings.max_steps, self.settings.max_steps)
        self._state = CodeState(episode_id=episode_id or uuid.uuid4().hex, task_id=task.id)
        entry = str(task.data.get("entry_point", ""))
        return CodeObservation(
            task_id=task.id,
            prompt=str(task.data["prompt"]) + INSTRUCTIONS.format(entry=entry),
            reward=0.0,
            metadata={
                "entry_point": entry,
                "max_steps": self._max_steps,
                "sandbox": self._runtime.describe(),
            },
        )

    def step(self, action: CodeAction, timeout_s: float | None = None) -> CodeObservation:
        """``timeout_s``: the step request's deadline, kept here: a cell runs at most that
        long (and ``cell_timeout_s``), then is interrupted: an observation, not an error."""
        if self._worker is None or self._task is None:
            raise RuntimeError("reset the coding env before stepping")
        if self._state.submitted:
            raise RuntimeError("the episode is over (submitted); reset for a new one")
        self._state.step_count += 1
        if action.submit:
            solution = action.code if action.code.strip() else "\n\n".join(self._cells)
            return self._finish(CodeObservation(task_id=self._task.id), solution, truncated=False)
        obs = self._run_cell(action.code, timeout_s)
        if self._state.step_count >= self._max_steps:
            return self._finish(obs, "\n\n".join(self._cells), truncated=True)
        return obs

    def state(self) -> CodeState:
        return self._state.model_copy()

    def interrupt(self) -> None:
        """Called by the server when a call overruns its deadline: stop the cell."""
        if self._worker is not None:
            self._worker.interrupt()

    def close(self) -> None:
        self._retire_worker()
        if self._own_runtime:
            self._runtime.close()

    # ---- internals ---------------------------------------------------------------
    def _run_cell(self, code: str, timeout_s: float | None = None) -> CodeObservation:
        assert self._worker is not None
        self._state.execution_count += 1
        count = self._state.execution_count
        start = time.monotonic()
        try:
            reply = self._worker.run(
                code,
                timeout_s=_cell_timeout(self.settings.cell_timeout_s, timeout_s),
                grace_s=self.settings.grace_s,
                count=count,
            )
        except WorkerLost as lost:
            obs = self._restart(count, str(lost), timed_out=lost.timed_out)
            return obs.model_copy(update={"duration_s": round(time.monotonic() - start, 6)})
        if reply.exception is None and not reply.timed_out:
            self._cells.append(code)
        return _observation(reply, count, self._task.id if self._task else None)

    def _restart(self, count: int, why: str, *, timed_out: bool) -> CodeObservation:
        """The worker is gone: a fresh one, with every variable (and cell) lost (none
        when the runtime is closed: the server is stopping)."""
        self._retire_worker()
        if not self._runtime.closed:
            self._worker = self._runtime.pool.acquire()
        self._cells = []
        self._state.restarts += 1
        return CodeObservation(
            stderr=f"[worker restarted: {why}; all state was lost]\n",
            exception=ExceptionInfo(type="StateLost", message=why),
            execution_count=count,
            timed_out=timed_out,
            state_lost=True,
            task_id=self._task.id if self._task else None,
        )

    def _finish(self, obs: CodeObservation, solution: str, *, truncated: bool) -> CodeObservation:
        assert self._task is not None
        grade: Grade = self._runtime.grader.grade(solution, self._task.data["tests"])
        self._state.submitted = True
        self._state.reward = grade.reward
        metadata = {**obs.metadata, "reward_breakdown": grade.breakdown(), "grade": grade.to_json()}
        return obs.model_copy(
            update={"reward": grade.reward, "done": True, "truncated": truncated, "metadata": metadata}
        )

    def _retire_worker(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            self._runtime.pool.retire(worker)


def _observation(reply: Reply, count: int, task_id: str | None) -> CodeObservation:
    exc = ExceptionInfo(**reply.exception) if reply.exception else None
    return CodeObservation(
        stdout=reply.stdout,
        stderr=reply.stderr,
        result=reply.result,
        exception=exc,
        execution_count=count,
        duration_s=round(reply.duration_s, 6),
        timed_out=reply.timed_out,
        stdout_omitted_bytes=reply.stdout_omitted_bytes,
        stderr_omitted_bytes=reply.stderr_omitted_bytes,
        task_id=task_id,
        reward=0.0,
    )
