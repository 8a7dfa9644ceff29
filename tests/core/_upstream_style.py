"""An env client written the way upstream env packages write theirs (``envs/*/client.py``):
a subclass of ``openenv.core.env_client.EnvClient`` with the three hooks, over the test
env of ``tests/_envs.py``."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from tests._envs import TAction, TObservation, TState


class TEnv(EnvClient[TAction, TObservation, TState]):
    """Hooks as upstream clients write them: dump the action, rebuild the observation."""

    def _step_payload(self, action: TAction) -> dict[str, Any]:
        return {"message": action.message, "done": action.done, "truncated": action.truncated}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TObservation]:
        obs = payload.get("observation", {})
        observation = TObservation(
            message=obs.get("message", ""),
            step=obs.get("step", 0),
            instance=obs.get("instance", 0),
            seed=obs.get("seed"),
            options=obs.get("options"),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        reward, done = payload.get("reward"), payload.get("done", False)
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> TState:
        return TState(episode_id=payload.get("episode_id"), step_count=payload.get("step_count", 0),
                      instance=payload.get("instance", 0))
