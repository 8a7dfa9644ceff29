"""``CLIAgentAdapter``: a real agent CLI (``AGENTS``) as an RFC 005 harness, captured.

Each turn runs the agent once, non-interactively, on the turn's message, in a sandbox
whose only way out is the adapter's capture session (``run_agent``); Claude Code goes on
with its conversation on later turns (``--continue``), as OpenCode does; mini-swe-agent,
Codex CLI and Gemini CLI start anew and say they are done after each. A turn's events are read
from the capture session: per model call an ``llm_request`` and ``llm_response`` and a
``tool_call`` per call the model made, then ``turn_complete``. The token-exact trace is the session's
(``adapter.session``: ``to_training_trace(session.graph, export_session(session))``).

``terminal_task_env`` puts one on a terminal env task: the agent runs in the task
session's sandbox and the task's verifier scores the turn (the episode ends there).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._exceptions import OpenEnvError
from ._agentic import (
    AgenticHarnessAdapter,
    HarnessConfig,
    HarnessError,
    HarnessEvent,
    HarnessEventType,
    HarnessNotRunningError,
    HarnessStartupError,
    HarnessTurnTimeoutError,
)
from ._agents import AGENTS, DEFAULT_MODEL, AgentOptions, AgentRun, launch, run_agent
from ._harness_env import HarnessEnvironment
from ._image_agent import TASK_INSTRUCTION, ImageAgentRun, run_agent_in_image
from ._tool_bridge import ToolSource

__all__ = ["CLIAgentAdapter", "InImage", "TerminalTaskHarness", "terminal_task_env"]

#: Each agent's own tools (env tools must not shadow them).
_BUILTIN = {
    "claude-code": frozenset(
        {"Agent", "Bash", "Edit", "Glob", "Grep", "Read", "Write", "WebFetch", "WebSearch"}
    ),
    "mini-swe-agent": frozenset({"bash"}),
    "opencode": frozenset({"bash", "edit", "glob", "grep", "read", "task", "todowrite", "webfetch", "write"}),
    "gemini-cli": frozenset(
        {"run_shell_command", "read_file", "write_file", "replace", "glob", "list_directory", "web_fetch"}
    ),
    "codex": frozenset(
        {"shell", "shell_command", "exec_command", "write_stdin", "apply_patch", "update_plan"}
    ),
}
SandboxFactory = Callable[[], Awaitable[Any]]


@dataclass(frozen=True)
class InImage:
    """Where a ``CLIAgentAdapter`` runs its agent instead of a sandbox: each turn in a fresh
    container of ``image`` (the terminal env's, ``openenv build envs/terminal_env``, or any
    image with the terminal env installed) on terminal task ``task_id``, scored inside by
    the task's verifier (``run_agent_in_image``); ``memory`` the container's limit."""

    image: str
    task_id: str
    memory: str = "2g"


class CLIAgentAdapter(AgenticHarnessAdapter):
    """``config.name`` is the agent (a key of ``AGENTS``); ``capture`` the running
    ``CaptureServer`` its calls go through; where it runs, one of: ``sandbox``, an async
    callable giving the ``openenv.sandbox.Sandbox`` it runs in at ``start`` (its owner closes
    it; a terminal env session's in ``terminal_task_env``), or ``image``, an ``InImage``
    (a container per turn); ``root`` where the agents are installed (default ``agents_dir()``).
    ``last_run`` is the last turn's ``AgentRun`` (an ``ImageAgentRun`` in an image, with the
    verifier's ``reward``)."""

    def __init__(
        self,
        config: HarnessConfig,
        *,
        capture: Any,
        sandbox: SandboxFactory | None = None,
        image: InImage | None = None,
        root: Path | None = None,
    ) -> None:
        if config.name not in AGENTS:
            raise HarnessStartupError(f"no agent {config.name!r}: choose one of {', '.join(AGENTS)}")
        if (sandbox is None) == (image is None):
            raise HarnessStartupError("say where the agent runs: sandbox= (a factory) or image= (InImage)")
        super().__init__(config)
        self.BUILTIN_TOOL_NAMES = _BUILTIN.get(config.name, frozenset())
        self.agent, self.capture, self.root = AGENTS[config.name], capture, root
        self._factory, self.image = sandbox, image
        self.box: Any = None
        self.session: Any = None
        self.tools_url: str | None = None
        self.last_run: AgentRun | None = None
        self._turns = 0
        self._running = False

    async def start(self, working_directory: str) -> None:
        why = self.agent.missing(self.root)
        if why:
            raise HarnessStartupError(why)
        if self.image is not None:
            await _image_ready(self.config.name, self.image.image, self.root)
        else:
            assert self._factory is not None
            try:
                self.box = await self._factory()
            except OpenEnvError as exc:
                raise HarnessStartupError(f"no sandbox for {self.config.name}: {exc}") from exc
        self.session = self.capture.registry.create(harness=self.config.name)
        self._turns, self._running = 0, True

    async def stop(self) -> None:
        self.box, self._running = None, False  # the sandbox is its owner's to close

    async def inject_tools(self, tools: list[Any], bridge_url: str | None = None) -> None:
        """The agent gets the tools at ``bridge_url`` (an MCP server on a host loopback port)
        as MCP server ``env``, relayed into its sandbox or container (``tools_url``)."""
        if tools and self.agent.mcp_args is None:
            raise HarnessError(f"{self.config.name} takes no env tools over MCP here")
        if tools and bridge_url is None:
            raise HarnessError(f"{self.config.name}: env tools need the URL of the MCP bridge serving them")
        self.tools_url = bridge_url if tools else None

    async def is_alive(self) -> bool:
        if self.image is not None:
            return self._running
        return self.box is not None and not getattr(self.box, "closed", False)

    def _options(self) -> AgentOptions:
        config = self.config
        return AgentOptions(
            model=config.model or DEFAULT_MODEL, timeout_s=config.session_timeout_s, root=self.root,
            extra_env=config.env_vars, tools_url=self.tools_url,
        )  # fmt: skip

    async def _run(self, message: str) -> AgentRun:
        """One run of the agent on ``message``, where it runs."""
        sid = self.session.session_id
        if self.image is not None:
            image = self.image
            return await run_agent_in_image(
                image.image, self.config.name, image.task_id, self.capture, sid, instruction=message,
                memory=image.memory, **self._options(),
            )  # fmt: skip
        resume = self._turns > 0 and bool(self.agent.resume_args)
        name, options = self.config.name, self._options()
        return await run_agent(self.box, name, message, self.capture, sid, resume=resume, **options)

    async def send_message_streaming(self, message: str) -> AsyncIterator[HarnessEvent]:
        if not await self.is_alive():
            raise HarnessNotRunningError(f"{self.config.name} is not running: call start() first")
        before = len(self.session.graph)
        try:
            run = await self._run(message)
        except OpenEnvError as exc:  # no container, no verdict: the turn failed, said why
            raise HarnessError(f"{self.config.name}: {exc}") from exc
        self.last_run = run
        self._turns += 1
        nodes = self.session.graph.nodes()[before:]
        for node in nodes:
            for event in _call_events(node):
                yield event
        if run.timed_out:
            raise HarnessTurnTimeoutError(f"{self.config.name} ran past {self.config.session_timeout_s} s")
        if run.exit_code != 0:
            tail = (run.stderr or run.stdout).strip()[-500:]
            raise HarnessError(f"{self.config.name} exited {run.exit_code}: {tail}")
        # it cannot go on: the turn was the whole task (an image's container is gone with it)
        done = self.image is not None or not self.agent.resume_args
        data: dict[str, Any] = {"response": _answer(run.stdout, nodes), "done": done}
        data["model_calls"] = run.calls
        if isinstance(run, ImageAgentRun):  # scored in the container, by the task's verifier
            data.update(reward=run.reward, reward_breakdown=run.breakdown)
        yield HarnessEvent(type=HarnessEventType.TURN_COMPLETE, data=data)


async def _image_ready(name: str, image: str, root: Path | None) -> None:
    """Refuse, saying why, an agent that cannot run in an image, no Docker engine, no ``image``."""
    from ..containers._docker import docker_client

    try:
        launch(name, TASK_INSTRUCTION, "check", root=root, native=True)
        client = await asyncio.to_thread(docker_client)
    except OpenEnvError as exc:
        raise HarnessStartupError(f"{name} cannot run in image {image}: {exc}") from exc
    try:
        await asyncio.to_thread(client.api.inspect_image, image)
    except Exception as exc:  # docker.errors.ImageNotFound, or the engine's error
        raise HarnessStartupError(
            f"no image {image} ({type(exc).__name__}): build it (openenv build envs/terminal_env)"
        ) from None
    finally:
        client.close()


def _call_events(node: Any) -> list[HarnessEvent]:
    reply = node.response_message or {}
    events = [
        HarnessEvent(
            type=HarnessEventType.LLM_REQUEST, data={"messages": node.request_messages, "model": node.model}
        ),
        HarnessEvent(
            type=HarnessEventType.LLM_RESPONSE,
            data={
                "content": reply.get("content"),
                "usage": {"completion_tokens": len(node.sampled_ids)},
                "node_id": node.node_id,
            },
        ),
    ]
    for call in reply.get("tool_calls") or []:
        fn = call.get("function") or {}
        args: Any = fn.get("arguments")
        with contextlib.suppress(TypeError, ValueError):
            args = json.loads(args)
        events.append(
            HarnessEvent(
                type=HarnessEventType.TOOL_CALL, data={"tool_name": fn.get("name"), "arguments": args}
            )
        )
    return events


def _answer(stdout: str, nodes: list[Any]) -> str:
    """The agent's final answer: its JSON output's ``result`` (Claude Code) or ``response``
    (Gemini CLI), else the last reply's text."""
    with contextlib.suppress(ValueError, AttributeError):
        out = json.loads(stdout.strip())
        result = out.get("result", out.get("response"))
        if isinstance(result, str):
            return result
    for node in reversed(nodes):
        content = (node.response_message or {}).get("content")
        if content:
            return str(content)
    return ""


class TerminalTaskHarness(HarnessEnvironment):
    """A ``HarnessEnvironment`` that also owns the ``TerminalEnv`` (``terminal``) its agent
    works in; closing it closes both."""

    terminal: Any = None

    async def close(self) -> None:
        await super().close()
        if self.terminal is not None:
            await self.terminal.close()


def terminal_task_env(
    agent: str,
    task_id: str,
    capture: Any,
    *,
    root: Path | None = None,
    model: str = DEFAULT_MODEL,
    image: str | None = None,
    tools: ToolSource | None = None,
    **terminal: Any,
) -> TerminalTaskHarness:
    """``agent`` on terminal task ``task_id`` as an env, each turn scored by the task's
    verifier, which ends the episode (``reward`` the verifier's,
    ``metadata["reward_breakdown"]`` its detail); ``tools``: the env's tools offered to
    the agent over MCP (``HarnessEnvironment``'s). Where the agent runs: by default
    ``reset`` resets a ``TerminalEnv`` (``terminal``: its arguments) to the task and starts
    the agent in that session's sandbox; with ``image`` (a terminal env image) each turn is
    a container of that image, the image's own terminal env reset to the task inside
    (``InImage``; no ``terminal`` arguments).

    Raises:
        HarnessStartupError: no terminal env installed, terminal arguments with an ``image``.
    """
    config = HarnessConfig(name=agent, command=[agent], model=model)
    if image is not None:
        if terminal:
            given = ", ".join(sorted(terminal))
            raise HarnessStartupError(
                f"the terminal env in image {image} is the image's own: it takes no {given}"
            )
        adapter = CLIAgentAdapter(config, capture=capture, image=InImage(image, task_id), root=root)

        async def scored(action: Any, obs: Any) -> float:  # in the container, by the verifier
            run = adapter.last_run
            assert isinstance(run, ImageAgentRun)
            obs.done = True
            obs.metadata["reward_breakdown"] = run.breakdown
            return float(run.reward or 0.0)

        return TerminalTaskHarness(adapter, rubric=scored, tools=tools)
    try:
        terminal_env = importlib.import_module("terminal_env")
    except ImportError as exc:
        raise HarnessStartupError(
            "the terminal env is not installed (pip install -e envs/terminal_env)"
        ) from exc
    env = terminal_env.TerminalEnv(**terminal)

    async def sandbox() -> Any:
        await env.reset(options={"task_id": task_id})
        return env.session_sandbox

    async def verify(action: Any, obs: Any) -> float:
        verdict = await env.step(terminal_env.SubmitAction())
        obs.done = True
        obs.metadata["reward_breakdown"] = verdict.metadata.get("reward_breakdown")
        return float(verdict.reward or 0.0)

    harness = TerminalTaskHarness(
        CLIAgentAdapter(config, capture=capture, sandbox=sandbox, root=root), rubric=verify, tools=tools
    )
    harness.terminal = env
    return harness
