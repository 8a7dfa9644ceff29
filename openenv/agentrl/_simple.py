"""``SimpleShellAgent``: a small agent that owns its loop, for training on its runs.

It is what a coding CLI is, reduced to its loop: it talks to a model through the
official ``openai`` SDK (a base URL and an API key, nothing else), and to a terminal env
session it drives itself. Each turn it asks the model for one shell command, runs it in
the session (``run``), and shows the model the exit code and output; it stops when the
model answers ``done`` (or an empty line), or after ``max_turns`` commands, and then
submits, so the task's verifier scores the run. The trainer never sees a turn: it gets
the calls from the capture proxy and the reward from the verifier.

Texts are lower case: the ``tiny`` preset's alphabet has no capitals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SYSTEM_PROMPT", "AgentRun", "SimpleShellAgent", "first_messages"]

SYSTEM_PROMPT = "you are in a bash shell. reply with one shell command, or done when the task is done."
DONE = "done"


def first_messages(instruction: str) -> list[dict[str, str]]:
    """The chat of the agent's first call for a task's instruction."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": instruction.strip()}]


@dataclass
class AgentRun:
    """One run: the verifier's reward (``None`` when the run failed), what it ran."""

    task_id: str
    reward: float | None = None
    commands: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class SimpleShellAgent:
    """Ask for a command, run it, show the result; submit at the end (see the module)."""

    max_turns: int = 1
    max_tokens: int = 16
    temperature: float = 1.0
    command_timeout_s: float = 10.0
    output_chars: int = 400
    model: str = "policy"
    name: str = "simple"

    async def run(self, *, base_url: str, api_key: str, env_url: str, task_id: str) -> AgentRun:
        """Run on ``task_id`` of the terminal env at ``env_url``, the model at ``base_url``
        (an OpenAI-compatible ``/v1``) with ``api_key``; the env's reward at submit."""
        import openai

        from ..client import AsyncEnvClient

        run = AgentRun(task_id)
        llm = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
        try:
            env: AsyncEnvClient[dict[str, Any], dict[str, Any], dict[str, Any]] = AsyncEnvClient(env_url)
            async with env:
                first = await env.reset(task_id=task_id)
                messages: list[dict[str, Any]] = first_messages(_field(first.observation, "instruction"))
                for _ in range(self.max_turns):
                    reply = await llm.chat.completions.create(
                        model=self.model,
                        messages=messages,  # type: ignore[arg-type]
                        max_tokens=self.max_tokens,
                        temperature=self.temperature,
                    )
                    text = reply.choices[0].message.content or ""
                    messages.append({"role": "assistant", "content": text})
                    command = text.strip()
                    if not command or command.lower() == DONE:
                        break
                    run.commands.append(command)
                    ran = await env.step(
                        {"type": "run", "command": command, "timeout_s": self.command_timeout_s}
                    )
                    messages.append({"role": "user", "content": self._result(ran.observation)})
                done = await env.step({"type": "submit"})
                run.reward = float(done.reward or 0.0)
        finally:
            await llm.close()
        return run

    def _result(self, observation: Any) -> str:
        output = str(_field(observation, "output") or "")[-self.output_chars :]
        return f"exit {_field(observation, 'exit_code')}\n{output}".strip()


def _field(observation: Any, name: str) -> Any:
    if isinstance(observation, dict):
        return observation.get(name)
    return getattr(observation, name, None)
