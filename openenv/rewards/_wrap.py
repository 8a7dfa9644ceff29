"""``with_rubric``: score any env's steps with a rubric, without changing the env.

The wrapper is a subclass of the env class, so ``create_app`` and ``openenv serve``
take it as they take the env. Each session gets its own copy of the rubric (trajectory
rubrics keep per-episode state), reset with the env. After every ``step`` the rubric
scores ``(action, observation)``; the score replaces ``observation.reward`` and every
component's score goes in ``observation.metadata["reward_breakdown"]``. The env's own
reward stays reachable as a component: ``EnvReward()``.
"""

from __future__ import annotations

from typing import Any

from .._env import AsyncEnvironment, EnvClass, Environment, Execution
from ._rubric import Rubric, ScoreFn, as_rubric


def with_rubric(env_class: EnvClass, rubric: Rubric | ScoreFn, *, name: str | None = None) -> Any:
    """A subclass of ``env_class`` whose steps are scored by ``rubric``.

    ``rubric`` is a ``Rubric`` (copied per session) or a function
    ``fn(action, observation) -> float`` (sync or async). A sync env whose rubric may
    block (an ``HttpRubric``, an async rubric) runs on worker threads
    (``Execution.THREAD``) instead of the event loop.

    >>> Scored = with_rubric(EchoEnv, WeightedSum({"len": length, "env": EnvReward()}))  # doctest: +SKIP
    >>> app = create_app(Scored)  # doctest: +SKIP
    """
    proto = as_rubric(rubric)
    if not isinstance(env_class, type) or not issubclass(env_class, Environment | AsyncEnvironment):
        raise TypeError(f"with_rubric() needs an Environment or AsyncEnvironment class, not {env_class!r}")
    base: Any = env_class
    if issubclass(env_class, AsyncEnvironment):

        class AsyncScored(base):  # type: ignore[misc]
            async def reset(
                self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None
            ) -> Any:
                self.rubric.reset()
                return await super().reset(seed=seed, episode_id=episode_id, options=options)

            async def step(self, action: Any) -> Any:
                return await self.rubric.aapply(action, await super().step(action))

        scored: Any = AsyncScored
    else:

        class Scored(base):  # type: ignore[misc]
            def reset(
                self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None
            ) -> Any:
                self.rubric.reset()
                return super().reset(seed=seed, episode_id=episode_id, options=options)

            def step(self, action: Any) -> Any:
                return self.rubric.apply(action, super().step(action))

        scored = Scored
        if proto.is_blocking and env_class.execution in (Execution.INLINE, Execution.AUTO):
            scored.execution = Execution.THREAD

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        base.__init__(self, *args, **kwargs)
        self.rubric = proto.clone()

    scored.__init__ = __init__
    scored.__name__ = scored.__qualname__ = name or f"{env_class.__name__}WithRubric"
    scored.__doc__ = env_class.__doc__
    scored.__module__ = env_class.__module__
    scored.env_name = env_class.metadata().name
    scored.rubric = proto
    return scored
