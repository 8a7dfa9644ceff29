from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from .models import CounterAction, CounterObservation, CounterState


class CounterEnv(EnvClient[CounterAction, CounterObservation, CounterState]):
    def _step_payload(self, action: CounterAction) -> dict[str, Any]:
        return {"add": action.add}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CounterObservation]:
        obs = payload.get("observation", {})
        observation = CounterObservation(
            total=obs.get("total", 0), done=payload.get("done", False), reward=payload.get("reward")
        )
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=payload.get("done", False)
        )

    def _parse_state(self, payload: dict[str, Any]) -> CounterState:
        return CounterState(
            episode_id=payload.get("episode_id"),
            step_count=payload.get("step_count", 0),
            total=payload.get("total", 0),
        )
