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

import contextlib
import importlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
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
from ._agents import AGENTS, run_agent
from ._harness_env import HarnessEnvironment

__all__ = ["CLIAgentAdapter", "TerminalTaskHarness", "terminal_task_env"]

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


class CLIAgentAdapter(AgenticHarnessAdapter):
    """``config.name`` is the agent (a key of ``AGENTS``); ``capture`` the running
    ``CaptureServer`` its calls go through; ``sandbox`` gives the ``openenv.sandbox.Sandbox``
    it runs in at ``start`` (an async callable; its owner closes it; a terminal env
    session's in ``terminal_task_env``); ``root`` where the agents are installed
    (default ``agents_dir()``)."""

    def __init__(
        self,
        config: HarnessConfig,
        *,
        capture: Any,
        sandbox: SandboxFactory,
        root: Path | None = None,
    ) -> None:
        if config.name not in AGENTS:
            raise HarnessStartupError(f"no agent {config.name!r}: choose one of {', '.join(AGENTS)}")
        super().__init__(config)
        self.BUILTIN_TOOL_NAMES = _BUILTIN.get(config.name, frozenset())
        self.agent, self.capture, self.root = AGENTS[config.name], capture, root
        self._factory = sandbox
        self.box: Any = None
        self.session: Any = None
        self.tools_url: str | None = None
        self._turns = 0

    async def start(self, working_directory: str) -> None:
        why = self.agent.missing(self.root)
        if why:
            raise HarnessStartupError(why)
        try:
            self.box = await self._factory()
        except OpenEnvError as exc:
            raise HarnessStartupError(f"no sandbox for {self.config.name}: {exc}") from exc
        self.session = self.capture.registry.create(harness=self.config.name)
        self._turns = 0

    async def stop(self) -> None:
        self.box = None  # the sandbox is its owner's to close

    async def inject_tools(self, tools: list[Any], bridge_url: str | None = None) -> None:
        """The agent gets the tools at ``bridge_url`` (an MCP server on a host loopback port)
        as MCP server ``env``, relayed into its sandbox (``run_agent(tools_url=...)``)."""
        if tools and self.agent.mcp_args is None:
            raise HarnessError(f"{self.config.name} takes no env tools over MCP here")
        if tools and bridge_url is None:
            raise HarnessError(f"{self.config.name}: env tools need the URL of the MCP bridge serving them")
        self.tools_url = bridge_url if tools else None

    async def is_alive(self) -> bool:
        return self.box is not None and not getattr(self.box, "closed", False)

    async def send_message_streaming(self, message: str) -> AsyncIterator[HarnessEvent]:
        if not await self.is_alive():
            raise HarnessNotRunningError(f"{self.config.name} is not running: call start() first")
        before = len(self.session.graph)
        run = await run_agent(
            self.box,
            self.config.name,
            message,
            self.capture,
            self.session.session_id,
            model=self.config.model or "scripted",
            timeout_s=self.config.session_timeout_s,
            root=self.root,
            extra_env=self.config.env_vars,
            resume=self._turns > 0 and bool(self.agent.resume_args),
            tools_url=self.tools_url,
        )
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
        done = not self.agent.resume_args  # it cannot go on: the turn was the whole task
        yield HarnessEvent(
            type=HarnessEventType.TURN_COMPLETE,
            data={"response": _answer(run.stdout, nodes), "done": done, "model_calls": run.calls},
        )


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
    model: str = "scripted",
    **terminal: Any,
) -> TerminalTaskHarness:
    """``agent`` on terminal task ``task_id`` as an env: ``reset`` resets a ``TerminalEnv``
    (``terminal``: its arguments) to the task and starts the agent in that session's
    sandbox; each turn is scored by the task's verifier, which ends the episode
    (``reward`` the verifier's, ``metadata["reward_breakdown"]`` its detail)."""
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

    config = HarnessConfig(name=agent, command=[agent], model=model)
    harness = TerminalTaskHarness(
        CLIAgentAdapter(config, capture=capture, sandbox=sandbox, root=root), rubric=verify
    )
    harness.terminal = env
    return harness
