"""``Rubric``: a score of ``(action, observation)``, sync or async, with named children.

A rubric implements ``forward(action, observation) -> float`` as a plain or an
``async`` method. ``rubric(action, obs)`` scores synchronously; ``await
rubric.acall(action, obs)`` scores on an event loop (async leaves are awaited there).
Rubrics assigned as attributes are children (``self.tests = PassesTests()``), as in
``torch.nn.Module``; every rubric keeps its ``last_score``, and ``breakdown()`` gives
``{dotted.name: score}`` for the children scored by the last call.

Containers (``WeightedSum``, ``Gate``, ``Sequential``) are written once, as a plan that
yields the child to score next and receives its score; the sync and async drivers run
the same plan. Hooks (``register_forward_pre_hook`` / ``register_forward_hook``) run
around every scoring; ``state_dict`` / ``load_state_dict`` carry the attributes named in
``state_fields``. ``awaitable_call = True`` (upstream OpenEnv's convention, used by
``openenv.core.rubrics``) makes ``rubric(action, obs)`` return an awaitable when the
rubric or one under it is async, instead of running it to completion.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import re
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from .._aio import run_sync

Plan = Generator["Rubric", float, float]
ScoreFn = Callable[[Any, Any], float | Awaitable[float]]
PreHook = Callable[["Rubric", Any, Any], Any]
Hook = Callable[["Rubric", Any, Any, float], Any]


class Rubric:
    """Base class of every reward component. Subclass and implement ``forward``."""

    #: True when scoring may block (network, subprocess): a sync env served with it is
    #: moved off the event loop. Async ``forward`` methods count as blocking in sync use.
    blocking: bool = False
    #: ``rubric(action, obs)`` returns an awaitable when this rubric or one under it is
    #: async (upstream's convention) rather than running it to completion.
    awaitable_call: ClassVar[bool] = False
    #: ``{state_dict key: attribute}``: what ``state_dict`` saves and ``load_state_dict`` restores.
    state_fields: ClassVar[Mapping[str, str]] = {}
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

    def children(self) -> Iterator[Rubric]:
        yield from self._children.values()

    def named_rubrics(self, prefix: str = "") -> Iterator[tuple[str, Rubric]]:
        """Every descendant as ``(dotted.path, rubric)``, depth first; ``prefix`` (with
        or without its trailing dot) goes before each path."""
        if prefix and not prefix.endswith("."):
            prefix += "."
        for name, child in self._children.items():
            path = f"{prefix}{name}"
            yield path, child
            yield from child.named_rubrics(path + ".")

    def rubrics(self) -> Iterator[Rubric]:
        for _, rubric in self.named_rubrics():
            yield rubric

    def get_rubric(self, path: str) -> Rubric:
        node: Rubric = self
        try:
            for part in path.split("."):
                node = node._children[part]
        except KeyError:
            raise KeyError(f"Rubric path not found: {path}") from None
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

    def __call__(self, action: Any, observation: Any) -> Any:  # a float (see awaitable_call)
        """Score synchronously. An async ``forward`` runs in a fresh event loop, which is
        only possible off the event loop thread (a TypeError there: use ``acall``)."""
        if self.awaitable_call and self.is_async:
            return self.acall(action, observation)
        self._clear()
        return self._score_sync(action, observation)

    @property
    def is_async(self) -> bool:
        """This rubric or a descendant has an async ``forward``."""
        return self._async_forward() or any(r._async_forward() for _, r in self.named_rubrics())

    async def acall(self, action: Any, observation: Any) -> float:
        """Score on an event loop: async leaves are awaited, sync ones called."""
        self._clear()
        return await self._score_async(action, observation)

    def _score_sync(self, action: Any, observation: Any) -> float:
        for pre in self._pre_hooks():
            pre(self, action, observation)
        score = self._record(self._compute_sync(action, observation))
        for post in self._post_hooks():
            post(self, action, observation, score)
        return score

    async def _score_async(self, action: Any, observation: Any) -> float:
        for pre in self._pre_hooks():
            await _maybe_await(pre(self, action, observation))
        score = self._record(await self._compute_async(action, observation))
        for post in self._post_hooks():
            await _maybe_await(post(self, action, observation, score))
        return score

    def _compute_sync(self, action: Any, observation: Any) -> Any:
        if self._is_container():
            plan = self.plan(action, observation)
            try:
                child = next(plan)
                while True:
                    child = plan.send(child._score_sync(action, observation))
            except StopIteration as stop:
                return stop.value
        result = self.forward(action, observation)
        if inspect.isawaitable(result):
            refusal = f"{type(self).__name__} is async and was called synchronously on an event loop"
            result = run_sync(result, refusal + ": use `await rubric.acall(...)`")
        return result

    async def _compute_async(self, action: Any, observation: Any) -> Any:
        if self._is_container():
            plan = self.plan(action, observation)
            try:
                child = next(plan)
                while True:
                    child = plan.send(await child._score_async(action, observation))
            except StopIteration as stop:
                return stop.value
        if self.blocking and not self._async_forward():
            return await asyncio.to_thread(self.forward, action, observation)
        result = self.forward(action, observation)
        if inspect.isawaitable(result):
            result = await result
        return result

    # --- hooks and checkpoints --------------------------------------------------------

    def register_forward_pre_hook(self, hook: PreHook) -> None:
        """``hook(rubric, action, observation)`` before every scoring (may be async)."""
        self.__dict__.setdefault("_forward_pre_hooks", []).append(hook)

    def register_forward_hook(self, hook: Hook) -> None:
        """``hook(rubric, action, observation, score)`` after every scoring (may be async)."""
        self.__dict__.setdefault("_forward_hooks", []).append(hook)

    def _pre_hooks(self) -> list[PreHook]:
        return self.__dict__.get("_forward_pre_hooks", [])  # type: ignore[no-any-return]

    def _post_hooks(self) -> list[Hook]:
        return self.__dict__.get("_forward_hooks", [])  # type: ignore[no-any-return]

    def state_dict(self) -> dict[str, Any]:
        """Configuration to checkpoint: the attributes ``state_fields`` names."""
        return {key: getattr(self, attr) for key, attr in self.state_fields.items()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` returned (keys it does not know are ignored)."""
        for key, attr in self.state_fields.items():
            if key in state:
                setattr(self, attr, state[key])

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
        if judged := judgements(self):  # each LLM judge's reply: {path: record}
            observation.metadata["judge"] = judged
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


def judgements(rubric: Any) -> dict[str, Any]:
    """``{path: record}`` of every rubric in ``rubric`` (itself included, under its name)
    that keeps a record of its last scoring (``judgement_record()``: an LLM judge's reply)
    and was called by the last scoring."""
    found = [("", rubric), *getattr(rubric, "named_rubrics", lambda: [])()]
    out: dict[str, Any] = {}
    for path, r in found:
        record = getattr(r, "judgement_record", None)
        if callable(record) and getattr(r, "last_score", None) is not None:
            out[path or r.name] = record()
    return out


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _is_async(fn: Any) -> bool:
    call = type(fn).__dict__.get("__call__") if not inspect.isroutine(fn) else None
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value
