"""``Rubric``: a score of ``(action, observation)``, sync or async, with named children.

A rubric implements ``forward(action, observation) -> float`` as a plain or an
``async`` method. ``rubric(action, obs)`` scores synchronously; ``await
rubric.acall(action, obs)`` scores on an event loop (async leaves are awaited there).
Rubrics assigned as attributes are children (``self.tests = PassesTests()``), as in
``torch.nn.Module``; every rubric keeps its ``last_score``, and ``breakdown()`` gives
``{dotted.name: score}`` for the children scored by the last call.

Containers (``WeightedSum``, ``Gate``, ``Sequential``) are written once, as a plan that
yields the child to score next and receives its score; the sync and async drivers run
the same plan.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import re
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from typing import Any

Plan = Generator["Rubric", float, float]
ScoreFn = Callable[[Any, Any], float | Awaitable[float]]


class Rubric:
    """Base class of every reward component. Subclass and implement ``forward``."""

    #: True when scoring may block (network, subprocess): a sync env served with it is
    #: moved off the event loop. Async ``forward`` methods count as blocking in sync use.
    blocking: bool = False
    _children: dict[str, Rubric]

    def __init__(self, name: str | None = None) -> None:
        object.__setattr__(self, "_children", {})
        self.name = name or _snake(type(self).__name__)
        self.last_score: float | None = None

    # --- children -----------------------------------------------------------------

    def __setattr__(self, key: str, value: Any) -> None:
        if isinstance(value, Rubric) and not key.startswith("_"):
            self.__dict__["_children"][key] = value
        super().__setattr__(key, value)

    def add(self, name: str, child: Rubric | ScoreFn) -> Rubric:
        """Register ``child`` under ``name``; returns the child (as a ``Rubric``)."""
        rubric = as_rubric(child, name)
        self._children[name] = rubric
        return rubric

    def named_children(self) -> Iterator[tuple[str, Rubric]]:
        yield from self._children.items()

    def named_rubrics(self, prefix: str = "") -> Iterator[tuple[str, Rubric]]:
        """Every descendant as ``(dotted.path, rubric)``, depth first."""
        for name, child in self._children.items():
            path = f"{prefix}{name}"
            yield path, child
            yield from child.named_rubrics(path + ".")

    def get_rubric(self, path: str) -> Rubric:
        node: Rubric = self
        for part in path.split("."):
            node = node._children[part]
        return node

    @property
    def is_blocking(self) -> bool:
        """This rubric or a descendant may block (or is async)."""
        return (
            self.blocking
            or self._async_forward()
            or any(child.is_blocking for _, child in self.named_rubrics())
        )

    # --- scoring ------------------------------------------------------------------

    def forward(self, action: Any, observation: Any) -> float:
        """Score one step. Override (as a plain or an ``async def`` method)."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def plan(self, action: Any, observation: Any) -> Plan:
        """Containers override: yield children to score, return the combined score."""
        raise NotImplementedError
        yield self  # pragma: no cover - makes this a generator

    def _is_container(self) -> bool:
        return type(self).plan is not Rubric.plan

    def __call__(self, action: Any, observation: Any) -> float:
        """Score synchronously. An async ``forward`` runs in a fresh event loop, which is
        only possible off the event loop thread (a TypeError there: use ``acall``)."""
        self._clear()
        return self._score_sync(action, observation)

    async def acall(self, action: Any, observation: Any) -> float:
        """Score on an event loop: async leaves are awaited, sync ones called."""
        self._clear()
        return await self._score_async(action, observation)

    def _score_sync(self, action: Any, observation: Any) -> float:
        if self._is_container():
            plan = self.plan(action, observation)
            try:
                child = next(plan)
                while True:
                    child = plan.send(child._score_sync(action, observation))
            except StopIteration as stop:
                return self._record(stop.value)
        result = self.forward(action, observation)
        if inspect.isawaitable(result):
            result = _run_coroutine(result, self)
        return self._record(result)

    async def _score_async(self, action: Any, observation: Any) -> float:
        if self._is_container():
            plan = self.plan(action, observation)
            try:
                child = next(plan)
                while True:
                    child = plan.send(await child._score_async(action, observation))
            except StopIteration as stop:
                return self._record(stop.value)
        if self.blocking and not self._async_forward():
            result = await asyncio.to_thread(self.forward, action, observation)
        else:
            result = self.forward(action, observation)
            if inspect.isawaitable(result):
                result = await result
        return self._record(result)

    def _async_forward(self) -> bool:
        return _is_async(self.forward)

    def _record(self, score: Any) -> float:
        value = float(score)
        self.last_score = value
        return value

    def _clear(self) -> None:
        self.last_score = None
        for _, child in self.named_rubrics():
            child.last_score = None

    def breakdown(self) -> dict[str, float]:
        """``{dotted.name: score}`` of the descendants the last call scored (and of
        the parts an external rubric reported)."""
        out = dict(self.components())
        for path, r in self.named_rubrics():
            if r.last_score is not None:
                out[path] = r.last_score
                out.update({f"{path}.{k}": v for k, v in r.components().items()})
        return out

    def components(self) -> dict[str, float]:
        """Named parts of this rubric's own last score (an external rubric's reply)."""
        return {}

    def reset(self) -> None:
        """Start of an episode: clear per-episode state here and in every child."""
        for _, child in self.named_rubrics():
            child.reset_self()
        self.reset_self()

    def reset_self(self) -> None:
        """Clear this rubric's own per-episode state (trajectory rubrics override)."""

    def clone(self) -> Rubric:
        """An independent copy (one per session)."""
        return copy.deepcopy(self)

    # --- applying to an observation ----------------------------------------------

    def apply(self, action: Any, observation: Any) -> Any:
        """Score, then set ``observation.reward`` and ``metadata["reward_breakdown"]``."""
        return self._stamp(observation, self(action, observation))

    async def aapply(self, action: Any, observation: Any) -> Any:
        """``apply`` on an event loop."""
        return self._stamp(observation, await self.acall(action, observation))

    def _stamp(self, observation: Any, score: float) -> Any:
        observation.reward = score
        observation.metadata["reward_breakdown"] = self.breakdown() or {self.name: score}
        return observation

    def __repr__(self) -> str:
        kids = ", ".join(f"{k}={v!r}" for k, v in self._children.items())
        return f"{type(self).__name__}({kids})" if kids else f"{type(self).__name__}()"


class FunctionRubric(Rubric):
    """A plain function ``fn(action, observation) -> float`` (sync or async) as a rubric."""

    def __init__(self, fn: ScoreFn, name: str | None = None) -> None:
        super().__init__(name or getattr(fn, "__name__", None) or "function")
        self.fn = fn
        self.blocking = _is_async(fn)

    def forward(self, action: Any, observation: Any) -> Any:
        return self.fn(action, observation)

    def _async_forward(self) -> bool:
        return _is_async(self.fn)


class EnvReward(Rubric):
    """The env's own reward (``observation.reward``, None as 0.0), as a component."""

    def __init__(self, name: str = "env") -> None:
        super().__init__(name)

    def forward(self, action: Any, observation: Any) -> float:
        return float(getattr(observation, "reward", None) or 0.0)


def as_rubric(value: Rubric | ScoreFn, name: str | None = None) -> Rubric:
    """A rubric as is (renamed if ``name``), or a function wrapped in ``FunctionRubric``."""
    if isinstance(value, Rubric):
        if name is not None:
            value.name = name
        return value
    if callable(value):
        return FunctionRubric(value, name)
    raise TypeError(f"not a rubric or a function: {value!r}")


def named(children: Mapping[str, Rubric | ScoreFn] | Sequence[Rubric | ScoreFn]) -> dict[str, Rubric]:
    """Children as ``{name: rubric}``: a mapping's keys, or each rubric's own name."""
    if isinstance(children, Mapping):
        return {k: as_rubric(v, k) for k, v in children.items()}
    out: dict[str, Rubric] = {}
    for child in children:
        rubric = as_rubric(child)
        name, n = rubric.name, 2
        while name in out:
            name, n = f"{rubric.name}_{n}", n + 1
        rubric.name = name
        out[name] = rubric
    return out


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _is_async(fn: Any) -> bool:
    call = type(fn).__dict__.get("__call__") if not inspect.isroutine(fn) else None
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _run_coroutine(awaitable: Awaitable[Any], rubric: Rubric) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(awaitable))
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()
    raise TypeError(
        f"{type(rubric).__name__} is async and was called synchronously on an event loop: "
        "use `await rubric.acall(...)`"
    )


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
