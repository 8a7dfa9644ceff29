"""The terminal environment: a persistent, sandboxed ``bash`` per session, with tasks."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from openenv import AsyncEnvironment, EnvironmentMetadata
from openenv._exceptions import TaskNotFound, ValidationFailed
from openenv.sandbox import (
    Isolation,
    Sandbox,
    SandboxConfig,
    SandboxUnavailable,
    SessionLimits,
    resolve_isolation,
)
from openenv.sandbox._sandbox import describe

from ._container import ContainerBox
from ._container_verifier import verify_in_container
from ._pool import ShellPool, close_shell, reclaim_leftovers
from ._ptyio import off_loop, shared
from ._shell import Chunk, PtyShell, ShellDied, TerminalStalled, join_chunks
from ._task_images import TaskImages
from ._tasks import TASKS_DIR, HarborTaskSet, TerminalTask
from ._text import clean, clip
from ._verifier import Verdict, verify
from .models import (
    AnyTerminalAction,
    InterruptAction,
    ReadAction,
    ReadFileAction,
    RestartAction,
    RunAction,
    SendKeysAction,
    SubmitAction,
    TerminalAction,
    TerminalObservation,
    TerminalResetOptions,
    TerminalState,
    WriteFileAction,
)

_GRACE_S = 1.0  # after Ctrl-C, how long the prompt may take before the shell is restarted
#: Of a step's deadline, kept back for the wrap-up (Ctrl-C, the grace, a restart): at most half.
_WRAP_UP_S = 2.0
_WRITE = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1" && { [ -z "$2" ] || chmod "$2" "$1"; }'


class TerminalMetadata(EnvironmentMetadata):
    """``/metadata`` plus the sandbox in force."""

    sandbox: dict[str, Any] = {}


@dataclass(frozen=True, slots=True)
class TerminalResources:
    """Built once per server process: the sandbox config (checked) and the tasks."""

    config: SandboxConfig
    isolation: Isolation
    task_set: HarborTaskSet
    pool: ShellPool
    images: TaskImages

    @classmethod
    def build(
        cls,
        sandbox: str | None = None,
        tasks_dir: str | None = None,
        pool_size: int = 2,
        session_limits: str | None = None,
        base_images: str | None = None,
        image_pool_size: int = 1,
        task_set: HarborTaskSet | None = None,
        **_: Any,
    ) -> TerminalResources:
        overrides: dict[str, Any] = {"level": sandbox} if sandbox else {}
        if session_limits is not None:  # this env's own, over OPENENV_SANDBOX_LIMITS
            overrides["session_limits"] = SessionLimits.parse(session_limits)
        config = SandboxConfig.from_env(**overrides)
        isolation = resolve_isolation(config)  # strict without bubblewrap: refuse to start
        task_set = HarborTaskSet(tasks_dir) if tasks_dir else task_set or TerminalEnv.task_set
        task_set.load()
        images = TaskImages(config.session_limits, base_images, image_pool_size)
        return cls(config, isolation, task_set, ShellPool(config, pool_size), images)


#: ``max_timeout_s`` when not given: the longest a command, keys or a read waits.
DEFAULT_MAX_TIMEOUT_S = 120.0


class TerminalEnv(AsyncEnvironment[TerminalAction, TerminalObservation, TerminalState]):  # type: ignore[type-var]
    """A persistent bash on a PTY per session, in a sandbox, with verifiable tasks.

    Constructor arguments (``--env-kwargs``): ``sandbox`` (``strict``/``auto``/``none``;
    default ``OPENENV_SANDBOX`` or ``auto``), ``tasks_dir`` (a folder of Harbor-layout
    tasks; default the shipped ones), ``default_timeout_s`` (30), ``max_timeout_s``
    (120, lifted by a task's ``[agent] timeout_sec``; a value given is a hard cap),
    ``output_limit`` (characters per observation, 16000), ``max_steps`` (None),
    ``session_limits`` (each session's memory, CPU, processes and disk, as
    ``openenv serve --session-limits`` takes them: ``"memory=512M,cpus=0.5"``; default
    ``OPENENV_SANDBOX_LIMITS`` or the sandbox's defaults; a task with an image of its own
    gets the smaller of these and its ``task.toml`` request), ``base_images`` (for tasks
    with an image of their own: ``FROM`` images mapped to local ones,
    ``"python:3.11-slim=openenv-local/python:3.11-bookworm"``; default
    ``OPENENV_TASK_BASE_IMAGES``; see docs/harbor.md), ``image_pool_size`` (started
    containers with a shell kept ready per task image, 1; 0 starts each on demand).
    """

    env_name = "terminal_env"
    env_version = "0.1.0"
    reset_options_model = TerminalResetOptions
    call_timeout_s = 300.0
    #: The shipped tasks, or the folder ``OPENENV_TERMINAL_TASKS`` names (as the server's
    #: Task API lists them; ``tasks_dir`` changes only what a session resets to).
    task_set: ClassVar[HarborTaskSet] = HarborTaskSet(os.environ.get("OPENENV_TERMINAL_TASKS") or TASKS_DIR)
    _active: ClassVar[TerminalResources | None] = None

    @classmethod
    def process_resources(cls, **env_kwargs: Any) -> contextlib.AbstractContextManager[TerminalResources]:
        return cls._resources(**env_kwargs)

    @classmethod
    @contextlib.contextmanager
    def _resources(cls, **env_kwargs: Any) -> Iterator[TerminalResources]:
        resources = TerminalResources.build(**{"task_set": cls.task_set, **env_kwargs})
        reclaim_leftovers(resources.config)  # what a SIGKILLed server left, before any new
        shared()  # the terminal pump and shell starters: their threads start now, not on the loop
        cls._active = resources
        try:
            yield resources
        finally:
            cls._active = None
            resources.pool.close_now()
            resources.images.close()

    @classmethod
    def harness_env(cls, options: dict[str, str], env_kwargs: dict[str, Any]) -> Any:
        """``/harness`` on this env's server: an agent CLI on a task (``openenv.harness._served``)."""
        from openenv.harness._served import terminal_harness

        shared = {"resources": cls._active} if cls._active is not None else {}
        return terminal_harness(options, {**env_kwargs, **shared})

    @classmethod
    def metadata(cls) -> TerminalMetadata:
        base = super().metadata()
        return TerminalMetadata(**base.model_dump(), sandbox=cls.sandbox_report())

    @classmethod
    def health(cls) -> dict[str, Any]:
        """Fields for ``GET /health``: the sandbox in force."""
        return {"sandbox": cls.sandbox_report()}

    @classmethod
    def sandbox_report(cls) -> dict[str, Any]:
        """The sandbox in force in this process (for ``/metadata`` and ``/health``)."""
        if cls._active is not None:
            res = cls._active
            return describe(res.config, res.isolation, own_uid=os.geteuid() == 0)
        config = SandboxConfig.from_env()
        try:
            return describe(config, resolve_isolation(config), own_uid=os.geteuid() == 0)
        except SandboxUnavailable as exc:
            return {"requested": config.level.value, "level": "unavailable", "error": str(exc)}

    def __init__(
        self,
        resources: TerminalResources | None = None,
        *,
        sandbox: str | None = None,
        tasks_dir: str | None = None,
        default_timeout_s: float = 30.0,
        max_timeout_s: float | None = None,
        output_limit: int = 16_000,
        max_steps: int | None = None,
        pool_size: int = 2,
        session_limits: str | None = None,
        base_images: str | None = None,
        image_pool_size: int = 1,
    ) -> None:
        self._owns_resources = resources is None
        self.resources = resources or TerminalResources.build(
            sandbox, tasks_dir, pool_size, session_limits, base_images, image_pool_size, type(self).task_set
        )
        self.default_timeout_s = default_timeout_s
        self.max_timeout_s = DEFAULT_MAX_TIMEOUT_S if max_timeout_s is None else max_timeout_s
        # Only the default cap gives way to a task's agent time limit: one the operator set is kept.
        self.task_lifts_cap = max_timeout_s is None
        self._step_cap = self.max_timeout_s  # this step's wait bound: the request's deadline, if it has one
        self.output_limit = output_limit
        self.default_max_steps = max_steps
        self._sandbox: Sandbox | ContainerBox | None = None
        self._shell: PtyShell | None = None
        self._task: TerminalTask | None = None
        self._state = TerminalState()
        self._max_steps: int | None = None
        self._agent_deadline: float | None = None  # [agent] timeout_sec of an image task
        self._task_deadline: float | None = None  # [agent] timeout_sec of any task: lifts the cap
        self._done = False
        self._closing: set[asyncio.Task[None]] = set()

    # ---- episode --------------------------------------------------------------------------
    async def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Any = None,
    ) -> TerminalObservation:
        opts = (
            options if isinstance(options, TerminalResetOptions) else TerminalResetOptions(**(options or {}))
        )
        await self._teardown()
        task = None
        if not opts.free_shell:
            task = self._pick(opts, seed)
            if task.missing_tools and task.image is None:
                raise ValidationFailed(
                    f"task {task.id!r} needs {', '.join(task.missing_tools)}, not installed"
                )
        start = time.perf_counter()
        if task is not None and task.image is not None:
            self._shell = await self.resources.images.new_shell(task)
        else:
            self._shell = await self.resources.pool.take()
        self._sandbox = self._shell.sandbox
        if task is not None and task.image is None:
            await self._prepare(task)
        self._task, self._done = task, False
        self._max_steps = opts.max_steps or self.default_max_steps
        limit = task.agent_timeout_s if task is not None else None
        self._task_deadline = time.monotonic() + limit if limit else None
        self._agent_deadline = self._task_deadline if task is not None and task.image is not None else None
        self._state = TerminalState(
            episode_id=episode_id or uuid.uuid4().hex,
            task_id=task.id if task else None,
            cwd=self._shell.cwd,
            sandbox=self._sandbox.describe(),
        )
        instruction = task.instruction if task else ""
        prompt = (
            f"{instruction}\n\nYou are in {self._shell.cwd}." if task else f"You are in {self._shell.cwd}."
        )
        return TerminalObservation(
            prompt=prompt,
            instruction=instruction,
            task_id=self._state.task_id,
            cwd=self._shell.cwd,
            duration_s=time.perf_counter() - start,
            reward=0.0,
        )

    def _pick(self, opts: TerminalResetOptions, seed: int | None) -> TerminalTask:
        task_set = self.resources.task_set
        try:
            return TerminalTask.from_task(task_set.pick(opts, seed=seed))
        except TaskNotFound:
            why = task_set.broken.get(opts.task_id or "")
            if why:
                raise ValidationFailed(f"task {opts.task_id!r} is not served: {why}") from None
            raise

    async def _prepare(self, task: TerminalTask) -> None:
        box = self._sandbox
        assert isinstance(box, Sandbox)
        if task.workdir_files is not None:
            await off_loop(_copy_owned, task.workdir_files, box.workdir, box.uid)
        if task.setup_script is not None:
            done = await box.arun(["bash", "-s"], input=task.setup_script.read_bytes(), timeout_s=60)
            if done.exit_code != 0:
                raise RuntimeError(
                    f"task {task.id!r} setup failed: {done.stderr[-2000:].decode(errors='replace')}"
                )

    async def step(
        self, action: TerminalAction | AnyTerminalAction, timeout_s: float | None = None
    ) -> TerminalObservation:
        """``timeout_s``: the step request's deadline, kept here: a command, keys or read
        waits at most that long and is then an observation (``timed_out``), not an error.
        A task with an ``[agent] timeout_sec`` lifts the default cap (``max_timeout_s`` not
        given) to the time left to that limit (a long build or solve runs as one command, as
        in Harbor); a ``max_timeout_s`` the operator gave is kept."""
        if self._shell is None or self._sandbox is None or self._done:
            raise RuntimeError("reset first: no episode is running")
        cap = self.max_timeout_s
        if self._task_deadline is not None and self.task_lifts_cap:  # never below: it only lifts it
            cap = max(cap, self._task_deadline - time.monotonic())
        if timeout_s is not None:  # the wait ends early enough for the answer to come by the deadline
            cap = min(cap, timeout_s - min(_WRAP_UP_S, timeout_s / 2))
        self._step_cap = cap
        act = action.root if isinstance(action, TerminalAction) else action
        self._state.step_count += 1
        start = time.perf_counter()
        if self._agent_deadline is None:
            obs = await self._dispatch(act)
        else:  # at the task's agent time limit the action stops where it is, and is scored
            try:
                left = max(0.0, self._agent_deadline - time.monotonic())
                obs = await asyncio.wait_for(self._dispatch(act), left)
            except TimeoutError:
                chunk = self._shell.take() if self._shell is not None else Chunk(b"")
                obs = self._observe(chunk, timed_out=True, note="[the task's agent timeout_sec ran out]")
        obs.duration_s = time.perf_counter() - start
        out_of_steps = self._max_steps is not None and self._state.step_count >= self._max_steps
        out_of_time = self._agent_deadline is not None and time.monotonic() >= self._agent_deadline
        if not obs.done and (out_of_steps or out_of_time):
            verdict = await self._verify()  # the episode ends at its step or time limit: score it
            obs.reward, obs.done, obs.truncated = verdict.reward, True, True
            obs.metadata["reward_breakdown"] = verdict.breakdown()
            if out_of_time and not out_of_steps:
                obs.metadata["agent_timeout"] = True
        self._state.cwd = obs.cwd = obs.cwd or self._shell.cwd
        obs.task_id = self._state.task_id
        if not obs.prompt:
            obs.prompt = _render(obs)
        return obs

    async def state(self) -> TerminalState:
        return self._state.model_copy()

    @property
    def session_sandbox(self) -> Sandbox | ContainerBox | None:
        """The episode's sandbox (None between episodes): where an agent CLI run on this
        session's task runs (``openenv.harness.run_agent``)."""
        return self._sandbox

    async def close(self) -> None:
        await self._teardown()
        await asyncio.gather(*self._closing, return_exceptions=True)
        if self._owns_resources:
            await self.resources.pool.aclose()
            await self.resources.images.aclose()
            await asyncio.to_thread(self.resources.images.close)

    def interrupt(self) -> None:
        """Called by the server when a call overruns its deadline: Ctrl-C."""
        if self._shell is not None:
            self._shell.interrupt()

    # ---- actions ----------------------------------------------------------------------------
    async def _dispatch(self, act: AnyTerminalAction) -> TerminalObservation:
        match act:
            case RunAction():
                return await self._do_run(act)
            case SendKeysAction():
                return await self._do_send_keys(act)
            case ReadAction():
                return await self._do_read(act)
            case InterruptAction():
                return await self._do_interrupt()
            case RestartAction():
                return await self._do_restart()
            case WriteFileAction():
                return await self._do_write_file(act)
            case ReadFileAction():
                return await self._do_read_file(act)
            case SubmitAction():
                return await self._do_submit()
        raise ValidationFailed(f"not a terminal action: {type(act).__name__}")

    async def _do_run(self, action: RunAction) -> TerminalObservation:
        shell = self._live_shell()
        timeout = min(action.timeout_s or self.default_timeout_s, self._step_cap)
        earlier = shell.take()  # what background jobs printed since the last action
        deadline = time.monotonic() + timeout
        try:
            await shell.send_command(action.command, timeout)
            chunk = await shell.wait_finished(max(0.0, deadline - time.monotonic()))
            if chunk is not None:
                return self._observe(join_chunks(earlier, chunk), exit_code=chunk.status)
            chunk = await shell.stop(_GRACE_S)
            if chunk is not None:
                return self._observe(join_chunks(earlier, chunk), exit_code=chunk.status, timed_out=True)
            partial = join_chunks(earlier, shell.take())
            note = f"[timed out after {timeout:g}s; Ctrl-C did not stop it: the shell was restarted]"
        except TerminalStalled as exc:
            partial, note = join_chunks(earlier, shell.take()), f"[{exc}: the shell was restarted]"
        except ShellDied:
            partial, note = join_chunks(earlier, shell.take()), "[the shell exited: a new one was started]"
            timeout = 0.0
        await self._restart()
        return self._observe(partial, note=note, timed_out=timeout > 0, restarted=True)

    async def _do_send_keys(self, action: SendKeysAction) -> TerminalObservation:
        shell = self._live_shell()
        keys = action.keys + ("\n" if action.enter else "")
        timeout = min(action.timeout_s or 1.0, self._step_cap)
        try:
            await shell.write(keys.encode(), timeout)
        except TerminalStalled as exc:
            chunk = shell.take()
            return self._observe(chunk, exit_code=chunk.status, timed_out=True, note=f"[{exc}]")
        await shell.wait_quiet(timeout)
        chunk = shell.take()
        return self._observe(chunk, exit_code=chunk.status)

    async def _do_read(self, action: ReadAction) -> TerminalObservation:
        shell = self._live_shell()
        await shell.wait_quiet(min(action.timeout_s or 0.5, self._step_cap))
        chunk = shell.take()
        return self._observe(chunk, exit_code=chunk.status)

    async def _do_interrupt(self) -> TerminalObservation:
        shell = self._live_shell()
        chunk = await shell.stop(2.0)
        chunk = join_chunks(chunk, shell.take()) if chunk else shell.take()
        return self._observe(chunk, exit_code=chunk.status)

    async def _do_restart(self) -> TerminalObservation:
        earlier = self._shell.take() if self._shell else Chunk(b"")
        await self._restart()
        return self._observe(earlier, note="[a new shell was started]", restarted=True)

    async def _do_write_file(self, action: WriteFileAction) -> TerminalObservation:
        assert self._sandbox is not None
        if action.encoding == "base64":
            try:
                data = base64.b64decode(action.content, validate=True)
            except binascii.Error as exc:
                raise ValidationFailed(f"content is not valid base64: {exc}") from None
        else:
            data = action.content.encode()
        mode = format(action.mode, "o") if action.mode is not None else ""
        done = await self._sandbox.arun(
            ["sh", "-c", _WRITE, "sh", action.path, mode], input=data, cwd=self._cwd(), timeout_s=30
        )
        note = f"wrote {len(data)} bytes to {action.path}" if done.ok else ""
        return self._observe(Chunk(done.stderr), exit_code=done.exit_code, note=note)

    async def _do_read_file(self, action: ReadFileAction) -> TerminalObservation:
        assert self._sandbox is not None
        limit = 4 << 20
        done = await self._sandbox.arun(
            ["cat", "--", action.path], cwd=self._cwd(), timeout_s=30, output_limit=limit
        )
        if not done.ok:
            return self._observe(Chunk(done.stderr), exit_code=done.exit_code)
        if action.encoding == "base64":
            text = base64.b64encode(done.stdout).decode()
            return TerminalObservation(output=text, exit_code=0, omitted_bytes=done.stdout_omitted)
        text, cut = clip(done.stdout.decode("utf-8", errors="replace"), max(self.output_limit, limit))
        return TerminalObservation(output=text, exit_code=0, omitted_bytes=done.stdout_omitted + cut)

    async def _do_submit(self) -> TerminalObservation:
        verdict = await self._verify()
        self._state.submitted = True
        summary = f"[submitted: reward {verdict.reward:.3f} ({verdict.source}"
        summary += f", {verdict.passed}/{verdict.total} tests passed)]" if verdict.total else ")]"
        if verdict.error:
            summary += f"\n[verifier error: {verdict.error}]"
        return TerminalObservation(
            output=summary,
            prompt=summary,
            exit_code=verdict.exit_code,
            reward=verdict.reward,
            done=True,
            metadata={"reward_breakdown": verdict.breakdown(), "verifier_output": verdict.output},
        )

    # ---- helpers --------------------------------------------------------------------------------
    async def _verify(self) -> Verdict:
        self._done = True
        if self._task is None or self._sandbox is None:
            return Verdict(reward=0.0, source="no task")
        # Every process of the agent dies at once, the shell with them: none of them
        # sees the shell go (the submit) and gets to act before the checks.
        box = self._sandbox
        await (asyncio.to_thread(box.stop) if isinstance(box, ContainerBox) else off_loop(box.kill))
        if self._shell is not None:
            await self._shell.close()
        if isinstance(self._sandbox, ContainerBox):
            return await verify_in_container(self._sandbox, self._task)
        return await verify(self._sandbox, self._task)

    def _live_shell(self) -> PtyShell:
        assert self._shell is not None
        return self._shell

    def _cwd(self) -> str:
        return self._shell.cwd if self._shell else ""

    async def _restart(self) -> None:
        assert self._sandbox is not None
        if self._shell is not None:
            await self._shell.close()
        await off_loop(self._sandbox.kill)
        self._shell = PtyShell(self._sandbox)
        await self._shell.start()
        self._state.restarts += 1

    def _observe(
        self,
        chunk: Chunk,
        *,
        exit_code: int | None = None,
        timed_out: bool = False,
        restarted: bool = False,
        note: str = "",
    ) -> TerminalObservation:
        text, cut = clip(clean(chunk.output), self.output_limit)
        if note:
            text = f"{text}\n{note}" if text else note
        return TerminalObservation(
            output=text,
            exit_code=exit_code,
            timed_out=timed_out,
            omitted_bytes=chunk.omitted + cut,
            cwd=chunk.cwd or self._cwd(),
            session_restarted=restarted,
            reward=0.0,
        )

    async def _teardown(self) -> None:
        """End the episode's shell and sandbox, off the reset's critical path."""
        shell, box = self._shell, self._sandbox
        self._shell = self._sandbox = None
        if shell is not None:
            task = asyncio.ensure_future(close_shell(shell))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        elif box is not None:
            # a container's engine calls may take seconds: not on the shell starters
            await (asyncio.to_thread(box.close) if isinstance(box, ContainerBox) else off_loop(box.close))


def _render(obs: TerminalObservation) -> str:
    status = "running" if obs.exit_code is None else f"exit {obs.exit_code}"
    return f"{obs.output}\n[{status}{', timed out' if obs.timed_out else ''}] {obs.cwd}$"


def _copy_owned(src: Path, dest: Path, uid: int) -> None:
    # __pycache__: what pip compiled of a task's own .py files when it installed the env
    # (an image), not part of the task: a repo task would see an extra untracked file
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(src, dest, dirs_exist_ok=True, symlinks=True, ignore=ignore)
    if os.geteuid() == 0:
        for dirpath, dirs, files in os.walk(dest):
            for name in (*dirs, *files):
                os.lchown(os.path.join(dirpath, name), uid, uid)
