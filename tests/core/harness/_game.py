"""A number-guessing env client in process, the way upstream env clients look, and a
session factory over it built on ``StepEnvSessionAdapter`` (as upstream envs' harness modules are)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_server.mcp_types import Tool
from openenv.core.harness import ModelStepResult, ResourceSessionFactory, StepEnvSessionAdapter
from openenv.core.llm_client import LLMResponse, ToolCall

GUESS = Tool(
    name="guess",
    description="Guess the secret number.",
    input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
)


@dataclass
class Guess:
    n: int


@dataclass
class GameState:
    step_count: int = 0
    secret: int = 0

    def model_dump(self) -> dict[str, Any]:
        return {"step_count": self.step_count, "secret": self.secret}


@dataclass
class GameClient:
    """Reward 1.0 and done on the secret, else reward 0.0 and a hint."""

    secret: int = 3
    fail_reset: bool = False
    resets: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Guess] = field(default_factory=list)
    closed: int = 0

    def reset(self, **kwargs: Any) -> StepResult[dict[str, Any]]:
        self.resets.append(kwargs)
        if self.fail_reset:
            raise ConnectionError("env is down")
        self.steps.clear()
        return StepResult(observation={"hint": "between 0 and 9"}, reward=0.0, done=False)

    def step(self, action: Guess) -> StepResult[dict[str, Any]]:
        self.steps.append(action)
        hit = action.n == self.secret
        hint = "yes" if hit else ("higher" if action.n < self.secret else "lower")
        return StepResult(observation={"hint": hint}, reward=1.0 if hit else 0.0, done=hit)

    def state(self) -> GameState:
        return GameState(step_count=len(self.steps), secret=self.secret)

    def close(self) -> None:
        self.closed += 1


def game_session(client: GameClient, **kwargs: Any) -> StepEnvSessionAdapter:
    kwargs.setdefault("tool_specs", [GUESS])
    return StepEnvSessionAdapter(
        client,
        action_builder=lambda name, args: Guess(int(args["n"])),
        initial_messages_builder=lambda result, task: [
            {"role": "user", "content": f"Task {task}: guess, {result.observation['hint']}"}
        ],
        **kwargs,
    )


class GameFactory(ResourceSessionFactory[StepEnvSessionAdapter]):
    """A fresh ``GameClient`` per session, its secret taken from the task when it is an int."""

    def __init__(self) -> None:
        self.clients: list[GameClient] = []

    def create(
        self, task: Any, seed: int | None = None, episode_id: str | None = None
    ) -> StepEnvSessionAdapter:
        client = GameClient(secret=task if isinstance(task, int) else 3)
        self.clients.append(client)
        return game_session(client, task=task, seed=seed, episode_id=episode_id)


def guesses(*numbers: int, ids: tuple[list[int], list[int], list[float]] | None = None) -> Any:
    """A scripted model step: turn ``i`` guesses ``numbers[i]`` (the last one again after that)."""
    calls: list[list[dict[str, Any]]] = []

    def model_step(
        messages: list[dict[str, Any]], tools: list[Tool], sampling: dict[str, Any]
    ) -> ModelStepResult:
        calls.append([dict(m) for m in messages])
        n = numbers[min(len(calls) - 1, len(numbers) - 1)]
        reply = LLMResponse(
            content=f"try {n}", tool_calls=[ToolCall(id=f"c{len(calls)}", name="guess", args={"n": n})]
        )
        prompt, completion, logprobs = ids or ([], [], [])
        return ModelStepResult(
            response=reply, prompt_ids=prompt, completion_ids=completion, logprobs=logprobs
        )

    model_step.calls = calls  # type: ignore[attr-defined]
    return model_step
