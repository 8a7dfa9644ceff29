"""An env in upstream OpenEnv's layout, for bench/bench_upstream_env.py: the same files
are served by upstream 0.10.0 and by ours."""

from typing import Any
from uuid import uuid4

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment

from ..models import CountAction, CountObservation, CountState


class CountEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = CountState(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: Any = None, episode_id: Any = None, **kwargs: Any) -> CountObservation:
        self._state = CountState(episode_id=episode_id or str(uuid4()), step_count=0)
        return CountObservation(total=0, done=False, reward=0.0)

    def step(self, action: CountAction, timeout_s: Any = None, **kwargs: Any) -> CountObservation:
        self._state.step_count += 1
        self._state.total += action.add
        return CountObservation(total=self._state.total, done=False, reward=1.0)

    @property
    def state(self) -> CountState:
        return self._state


app = create_app(
    CountEnvironment, CountAction, CountObservation, env_name="bench_counter_env", max_concurrent_envs=128
)
