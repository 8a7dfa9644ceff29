from typing import Any
from uuid import uuid4

from openenv.core.env_server.interfaces import Environment

from ..models import CounterAction, CounterObservation, CounterState


class CounterEnvironment(Environment):
    """Adds each action's ``add`` to a total; the episode ends at 10 or more."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = CounterState(episode_id=str(uuid4()), step_count=0)

    def reset(
        self, seed: Any = None, episode_id: Any = None, start: int = 0, **kwargs: Any
    ) -> CounterObservation:
        self._state = CounterState(episode_id=episode_id or str(uuid4()), step_count=0, total=start)
        return CounterObservation(total=start, done=False, reward=0.0)

    def step(self, action: CounterAction, timeout_s: Any = None, **kwargs: Any) -> CounterObservation:  # type: ignore[override]
        self._state.step_count += 1
        self._state.total += action.add
        done = self._state.total >= 10
        return CounterObservation(total=self._state.total, done=done, reward=float(action.add))

    @property
    def state(self) -> CounterState:
        return self._state
