"""How an env's methods are called: on the loop, on worker threads, or on its own thread.

``EnvRunner`` holds the policy for one env class (and its per-process resources);
``EnvHandle`` wraps one instance and exposes one ``call`` coroutine whatever the env's
kind, under a deadline, so the session layer never branches on it. A fast sync env is
called directly on the event loop: no thread hop.

Deadlines: an async env's call is cancelled; a call on a thread cannot be, so the env's
``interrupt()`` (if it has one) is called on a thread of its own (never on the loop: it
may block) and gets ``interrupt_grace_s`` to return, then the call as long again; if
either does not, the session must be closed (``DeadlineExceeded`` with
``session_closed=True``) and the env is closed once the stray call returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from .._env import AnyEnv, AsyncEnvironment, EnvClass, Execution
from .._exceptions import DeadlineExceeded
from ._threads import INTERRUPTS, session_lanes

log = logging.getLogger("openenv.server")

#: An AUTO env method runs on the loop after this many fast calls in a row off it.
PROMOTE_AFTER = 8
#: A method promoted before needs this many times more fast calls to be promoted again
#: (8, 32, 128, ... after each demotion, up to ``MAX_PROMOTE_AFTER``).
PROMOTE_BACKOFF = 4
MAX_PROMOTE_AFTER = 8192
#: An env that keeps a step's deadline itself may take this long past it to wrap up
#: (interrupt a command, restart a shell) before the server's own bound cuts the call.
OWNED_DEADLINE_GRACE_S = 30.0
#: A method on the loop goes back to threads at its third slow call ("strike") close
#: together (more than ``DEMOTE_STRIKES - 1`` outstanding)...
DEMOTE_STRIKES = 3
#: ...of which each fast call on the loop forgives this much, so that a rare stall (the
#: process was preempted, a garbage collection ran) never demotes a fast method...
STRIKE_FORGIVEN = 1 / 256
#: ...or at once after one call this many times slower than ``slow_call_s``.
DEMOTE_AT_ONCE = 25


def _promote_after(demotions: int) -> int:
    """Fast calls in a row off the loop that promote a method demoted ``demotions`` times."""
    return int(min(PROMOTE_AFTER * PROMOTE_BACKOFF**demotions, MAX_PROMOTE_AFTER))


class EnvRunner:
    """Builds env instances for one env class and decides where their calls run."""

    def __init__(
        self,
        env_class: EnvClass,
        factory: Callable[..., AnyEnv],
        *,
        slow_call_s: float,
        thread_workers: int,
        call_timeout_s: float = 0.0,
        max_call_timeout_s: float = 3600.0,
        interrupt_grace_s: float = 1.0,
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.env_class = env_class
        self._factory = factory
        self.env_kwargs = dict(env_kwargs or {})
        self.is_async = issubclass(env_class, AsyncEnvironment)
        self.execution = Execution.INLINE if self.is_async else env_class.execution  # type: ignore[union-attr]
        self.slow_call_s = slow_call_s
        own = env_class.call_timeout_s
        self.call_timeout_s = own if own is not None else call_timeout_s
        self.max_call_timeout_s = max_call_timeout_s
        self.interrupt_grace_s = interrupt_grace_s
        #: ``step(action, timeout_s=...)``: the env is handed a step's deadline and keeps it
        #: (upstream's ``Environment.step`` signature)
        self.step_takes_deadline = "timeout_s" in inspect.signature(env_class.step).parameters
        self._thread_workers = thread_workers
        self._pool: ThreadPoolExecutor | None = None
        # AUTO: methods proven fast (run on the loop), counts of fast calls in a row off
        # it, strikes of methods on it, and how often each was sent back to threads.
        self._on_loop: set[str] = set()
        self._fast_runs: dict[str, int] = {}
        self._strikes: dict[str, float] = {}
        self._demotions: dict[str, int] = {}
        self._resources_cm: Any = None
        self._has_resources = False
        self._resources: Any = None

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._thread_workers, thread_name_prefix="openenv-env")
        return self._pool

    @property
    def always_inline(self) -> bool:
        """Every call of this env runs to completion on the loop without suspending."""
        return self.execution is Execution.INLINE and not self.is_async

    # --- per-process resources ----------------------------------------------------

    async def start(self) -> None:
        """Enter the env's per-process resources (once, at server startup)."""
        # Threads started now, not while serving (_threads.py)
        if callable(getattr(self.env_class, "interrupt", None)):
            INTERRUPTS.prestart(INTERRUPTS.max_idle)
        if self.execution is Execution.DEDICATED_THREAD:
            session_lanes(self.env_class).prestart()
        cm = self.env_class.process_resources(**self.env_kwargs)
        if cm is None:
            return
        if isinstance(cm, contextlib.AbstractAsyncContextManager):
            self._resources = await cm.__aenter__()
        else:
            self._resources = await asyncio.to_thread(cm.__enter__)
        self._resources_cm = cm
        self._has_resources = True
        log.info("%s: per-process resources ready", self.env_class.__name__)

    async def stop(self) -> None:
        """Exit the per-process resources and stop the worker threads."""
        cm, self._resources_cm = self._resources_cm, None
        self._has_resources = False
        try:
            if isinstance(cm, contextlib.AbstractAsyncContextManager):
                await cm.__aexit__(None, None, None)
            elif cm is not None:
                await asyncio.to_thread(cm.__exit__, None, None, None)
        except Exception:
            log.exception("closing the per-process resources of %s failed", self.env_class.__name__)
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)

    def _build(self) -> AnyEnv:
        if self._has_resources:
            return self._factory(resources=self._resources, **self.env_kwargs)
        return self._factory(**self.env_kwargs)

    # --- AUTO placement -----------------------------------------------------------

    def _record(self, name: str, seconds: float, on_loop: bool) -> None:
        """Promote a method proven fast off the loop; demote one that is slow on it.

        One slow call on the loop is a strike, not a verdict: on a busy machine a fast
        call is sometimes slow by the clock because the process was not running.
        ``DEMOTE_STRIKES`` strikes (each fast call forgiving ``STRIKE_FORGIVEN`` of one),
        or one call ``DEMOTE_AT_ONCE`` times over ``slow_call_s``, send the method back
        to threads, from where it is promoted again after more fast calls each time.
        """
        slow = seconds > self.slow_call_s
        if on_loop:
            strikes = self._strikes
            if not slow:
                if strikes and name in strikes:
                    left = strikes[name] - STRIKE_FORGIVEN
                    if left > 0:
                        strikes[name] = left
                    else:
                        del strikes[name]
                return
            struck = strikes[name] = strikes.get(name, 0.0) + 1.0
            if struck > DEMOTE_STRIKES - 1 or seconds > DEMOTE_AT_ONCE * self.slow_call_s:
                self._demote(name, seconds)
            return
        if slow:
            self._fast_runs[name] = 0
            return
        runs = self._fast_runs.get(name, 0) + 1
        self._fast_runs[name] = runs
        if runs >= _promote_after(self._demotions.get(name, 0)):
            self._on_loop.add(name)
            self._fast_runs[name] = 0

    def _demote(self, name: str, seconds: float) -> None:
        self._on_loop.discard(name)
        self._strikes.pop(name, None)
        demotions = self._demotions[name] = self._demotions.get(name, 0) + 1
        log.log(
            logging.WARNING if demotions == 1 else logging.INFO,
            "%s.%s took %.1f ms on the event loop; it runs on worker threads again, and back on the "
            "loop after %d fast calls in a row (declare execution = Execution.THREAD or INLINE to choose)",
            self.env_class.__name__,
            name,
            seconds * 1e3,
            _promote_after(demotions),
        )

    def runs_on_loop(self, name: str) -> bool:
        """Whether a call of ``name`` runs on the event loop (no hop, no deadline)."""
        ex = self.execution
        return ex is Execution.INLINE or (ex is Execution.AUTO and name in self._on_loop)

    # --- instances ----------------------------------------------------------------

    async def open(self) -> EnvHandle:
        """Construct one env instance, off the event loop unless it is async or INLINE."""
        loop = asyncio.get_running_loop()
        if self.is_async or self.execution is Execution.INLINE:
            # Async and INLINE envs promise not to block: build them on the loop.
            return EnvHandle(self, self._build(), None)
        if self.execution is Execution.DEDICATED_THREAD:
            # A thread started before (the loop starts none), reused only for an env that
            # leaves no thread-local state (_threads.py)
            own = session_lanes(self.env_class).take()
            try:
                env = await loop.run_in_executor(own, self._build)
            except BaseException:
                own.shutdown(wait=False)
                raise
            return EnvHandle(self, env, own)
        return EnvHandle(self, await loop.run_in_executor(self.pool, self._build), None)

    def owned_deadline_bound(self, requested: float) -> float | None:
        """The server's bound on a step whose env owns the request's deadline
        (``step_takes_deadline``): the call deadline it has without one, stretched to
        the request's plus ``OWNED_DEADLINE_GRACE_S`` when that is later; None: none."""
        if not self.call_timeout_s:
            return None
        return max(self.call_timeout_s, requested + OWNED_DEADLINE_GRACE_S)

    def deadline(self, requested: float | None) -> float | None:
        """The deadline of one call: the request's, else the env's or server's (0: none)."""
        if requested is not None:
            return min(requested, self.max_call_timeout_s)
        return self.call_timeout_s or None


class EnvHandle:
    """One env instance with a uniform async ``call`` and ``close``."""

    __slots__ = ("env", "inflight", "interrupting", "own_thread", "runner")

    def __init__(self, runner: EnvRunner, env: Any, own_thread: Executor | None) -> None:
        self.runner = runner
        self.env = env
        self.own_thread = own_thread
        #: The latest call run on a thread: it may still run after an overrun or after
        #: its caller went away, and the env is never closed under it.
        self.inflight: asyncio.Future[Any] | None = None
        #: The latest ``interrupt()``, run on a thread of its own: the env is not closed
        #: under it either.
        self.interrupting: asyncio.Future[Any] | None = None

    async def call(self, name: str, timeout_s: float | None, /, *args: Any, **kwargs: Any) -> Any:
        """Run ``env.<name>(*args, **kwargs)`` where the runner says, under ``timeout_s``."""
        runner = self.runner
        fn = getattr(self.env, name)
        if runner.is_async:
            if timeout_s is None:
                return await fn(*args, **kwargs)
            async with asyncio.timeout(timeout_s) as scope:
                try:
                    return await fn(*args, **kwargs)
                except asyncio.CancelledError:
                    if scope.expired():
                        raise self._deadline(name, timeout_s, closed=False) from None
                    raise
        execution = runner.execution
        if execution is Execution.INLINE:
            return fn(*args, **kwargs)
        if execution is Execution.AUTO and name in runner._on_loop:
            t0 = time.perf_counter()
            result = fn(*args, **kwargs)
            runner._record(name, time.perf_counter() - t0, on_loop=True)
            return result
        if kwargs:
            fn = functools.partial(fn, **kwargs)
        if execution is Execution.AUTO:
            fn = functools.partial(_timed, runner, name, fn)
        loop = asyncio.get_running_loop()
        fut = self.inflight = loop.run_in_executor(self.own_thread or runner.pool, fn, *args)
        if timeout_s is None:
            return await asyncio.shield(fut)  # a cancelled caller leaves ``fut`` running
        done, _ = await asyncio.wait((fut,), timeout=timeout_s)
        if done:
            return fut.result()
        return await self._overrun(name, timeout_s, fut)

    async def _overrun(self, name: str, timeout_s: float, fut: asyncio.Future[Any]) -> Any:
        interrupt = getattr(self.env, "interrupt", None)
        if callable(interrupt):
            # Off the loop, on a thread of its own: an interrupt may block (a lock the
            # stuck call holds, a child that does not answer), and neither other sessions
            # nor /health may wait for it. It gets ``interrupt_grace_s`` to return and the
            # call as long again to end; past either, the session is closed.
            grace = self.runner.interrupt_grace_s
            stopping = self.interrupting = _off_loop(interrupt, f"{type(self.env).__name__}.interrupt")
            done, _ = await asyncio.wait((stopping,), timeout=grace)
            if done:
                if stopping.exception() is not None:
                    log.error(
                        "%s.interrupt() raised", type(self.env).__name__, exc_info=stopping.exception()
                    )
                done, _ = await asyncio.wait((fut,), timeout=grace)
                if done:
                    fut.exception()  # retrieved: whatever it returned or raised is discarded
                    raise self._deadline(name, timeout_s, closed=False, interrupted=True)
            else:
                log.warning(
                    "%s.interrupt() did not return within %g s; the session is closed",
                    type(self.env).__name__,
                    grace,
                )
        raise self._deadline(name, timeout_s, closed=True)

    def _deadline(
        self, name: str, timeout_s: float, closed: bool, interrupted: bool = False
    ) -> DeadlineExceeded:
        env = type(self.env).__name__
        if closed:
            how = "it could not be interrupted, so its session was closed"
        elif interrupted:
            how = "it was interrupted; the session is still usable"
        else:
            how = "it was cancelled; the session is still usable"
        return DeadlineExceeded(
            f"{env}.{name}() overran its deadline of {timeout_s:g} s: {how}. The call may have "
            "been applied in part.",
            timeout_s=timeout_s,
            call=name,
            session_closed=closed,
            applied="unknown",
        )

    async def close(self) -> None:
        """Close the env; never raises (errors are logged).

        While a call still runs on a thread (after an overrun, or when its caller went
        away) the env is closed once that call returns, never under it: this returns at
        once and the close happens then.
        """
        running = [f for f in (self.inflight, self.interrupting) if f is not None and not f.done()]
        if running:
            waited = running[0] if len(running) == 1 else asyncio.gather(*running, return_exceptions=True)
            waited.add_done_callback(_later(self._close_now))
            return
        await self._close_now()

    async def _close_now(self) -> None:
        runner = self.runner
        try:
            if runner.is_async:
                await self.env.close()
            elif runner.execution is Execution.INLINE:
                self.env.close()
            else:
                # THREAD, DEDICATED_THREAD and AUTO (an env that has not said its close is
                # fast: subprocesses, browsers) close off the loop.
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(self.own_thread or runner.pool, self.env.close)
        except Exception:
            log.exception("closing %s failed", type(self.env).__name__)
        finally:
            if self.own_thread is not None:
                self.own_thread.shutdown(wait=False)


def _timed(runner: EnvRunner, name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn`` on a worker thread and record how long it took (AUTO envs)."""
    t0 = time.perf_counter()
    try:
        return fn(*args)
    finally:
        runner._record(name, time.perf_counter() - t0, on_loop=False)


def _off_loop(fn: Callable[[], Any], name: str) -> asyncio.Future[Any]:
    """Run ``fn`` on a thread of its own; its outcome as a future of this loop.

    Not the env's worker pool: every worker may be held by calls as stuck as the one
    being interrupted, and a blocked ``fn`` must not hold a thread the pool needs. The
    thread is a lane started before (``_threads.INTERRUPTS``): the loop starts none.
    """
    loop = asyncio.get_running_loop()
    out: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if out.done():
            return
        if error is not None:
            out.set_exception(error)
        else:
            out.set_result(result)

    def run() -> None:
        try:
            result, error = fn(), None
        except BaseException as e:  # handed to the loop; logged there
            result, error = None, e
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, result, error)

    out.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "not retrieved"
    INTERRUPTS.run(run)
    return out


def _later(coro_fn: Callable[[], Any]) -> Callable[[Any], None]:
    def callback(_fut: Any) -> None:
        if not _fut.cancelled():
            _fut.exception()  # mark retrieved
        task = asyncio.ensure_future(coro_fn())
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)

    return callback


_BACKGROUND: set[asyncio.Future[Any]] = set()
