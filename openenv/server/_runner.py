"""How an env's methods are called: on the loop, on worker threads, or on its own thread.

``EnvRunner`` holds the policy for one env class; ``EnvHandle`` wraps one instance and
exposes the same four coroutines whatever the env's kind, so the session layer never
branches on it. A fast sync env is called directly on the event loop: no thread hop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._env import AnyEnv, AsyncEnvironment, EnvClass, Environment, Execution

log = logging.getLogger("openenv.server")


class EnvRunner:
    """Builds env instances for one env class and decides where their calls run."""

    def __init__(
        self,
        env_class: EnvClass,
        factory: Callable[[], AnyEnv],
        *,
        slow_call_s: float,
        thread_workers: int,
    ) -> None:
        self.env_class = env_class
        self.factory = factory
        self.is_async = issubclass(env_class, AsyncEnvironment)
        self.execution = Execution.INLINE if self.is_async else env_class.execution  # type: ignore[union-attr]
        self.slow_call_s = slow_call_s
        self._thread_workers = thread_workers
        self._pool: ThreadPoolExecutor | None = None

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._thread_workers, thread_name_prefix="openenv-env")
        return self._pool

    def demote(self, what: str, seconds: float) -> None:
        """An AUTO env made a slow call: run this class on worker threads from now on."""
        if self.execution is Execution.AUTO:
            self.execution = Execution.THREAD
            log.warning(
                "%s.%s took %.1f ms on the event loop; running %s on worker threads from now "
                "on (declare execution = Execution.THREAD or INLINE to choose)",
                self.env_class.__name__,
                what,
                seconds * 1e3,
                self.env_class.__name__,
            )

    async def open(self) -> EnvHandle:
        """Construct one env instance, off the event loop unless it is async."""
        loop = asyncio.get_running_loop()
        if self.is_async or self.execution is Execution.INLINE:
            # Async and INLINE envs promise not to block: build them on the loop.
            return EnvHandle(self, self.factory(), None)
        if self.execution is Execution.DEDICATED_THREAD:
            own = ThreadPoolExecutor(1, thread_name_prefix="openenv-session")
            try:
                env = await loop.run_in_executor(own, self.factory)
            except BaseException:
                own.shutdown(wait=False)
                raise
            return EnvHandle(self, env, own)
        return EnvHandle(self, await loop.run_in_executor(self.pool, self.factory), None)

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


class EnvHandle:
    """One env instance with uniform async ``reset``/``step``/``state``/``close``."""

    __slots__ = ("env", "own_thread", "runner")

    def __init__(self, runner: EnvRunner, env: Any, own_thread: ThreadPoolExecutor | None) -> None:
        self.runner = runner
        self.env = env
        self.own_thread = own_thread

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        runner = self.runner
        fn = getattr(self.env, name)
        if runner.is_async:
            return await fn(*args, **kwargs)
        if runner.execution is Execution.INLINE:
            return fn(*args, **kwargs)
        if runner.execution is Execution.AUTO:
            t0 = time.perf_counter()
            result = fn(*args, **kwargs)
            took = time.perf_counter() - t0
            if took > runner.slow_call_s:
                runner.demote(name, took)
            return result
        executor = self.own_thread or runner.pool
        loop = asyncio.get_running_loop()
        if kwargs:
            return await loop.run_in_executor(executor, lambda: fn(*args, **kwargs))
        return await loop.run_in_executor(executor, fn, *args)

    async def reset(self, seed: int | None, episode_id: str | None, options: dict[str, Any] | None) -> Any:
        return await self._call("reset", seed=seed, episode_id=episode_id, options=options)

    async def step(self, action: Any) -> Any:
        return await self._call("step", action)

    async def state(self) -> Any:
        return await self._call("state")

    async def close(self) -> None:
        """Close the env; never raises (errors are logged)."""
        try:
            if isinstance(self.env, Environment) and self.runner.execution is Execution.AUTO:
                # An AUTO env has not said its close is fast (subprocesses, browsers): off the loop.
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(self.runner.pool, self.env.close)
            else:
                await self._call("close")
        except Exception:
            log.exception("closing %s failed", type(self.env).__name__)
        finally:
            if self.own_thread is not None:
                self.own_thread.shutdown(wait=False)
