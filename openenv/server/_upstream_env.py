"""An env class of upstream OpenEnv's shape (``openenv.core.env_server.Environment``), and
its companions (transforms, the chat message and tokenizer protocols).

An upstream-style env differs from ours (``openenv.Environment``) in shape only:
``reset(seed=None, episode_id=None, **kwargs)`` takes its options as keywords,
``step(action, timeout_s=None, **kwargs)`` takes the request's deadline, ``state`` is a
property, and ``SUPPORTS_CONCURRENT_SESSIONS`` says whether several sessions may run
at once. ``openenv.core.env_server.create_app`` serves such a class by wrapping each
instance in one of our envs (``_upstream_app``): one server, one wire format.
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from typing_extensions import TypedDict

from ._upstream_models import Action, EnvironmentMetadata, Observation, State

#: A rubric (``openenv.rewards.Rubric`` or upstream's): ``rubric(action, observation)``.
Rubric = Any

__all__ = [
    "Action",
    "CompositeTransform",
    "Environment",
    "EnvironmentMetadata",
    "Message",
    "ModelTokenizer",
    "NullTransform",
    "Observation",
    "State",
    "TaskProvider",
    "Transform",
]

ActT = TypeVar("ActT", bound=Action)
ObsT = TypeVar("ObsT", bound=Observation)
StateT = TypeVar("StateT", bound=State)


class Message(TypedDict):
    """One chat message (Hugging Face chat-template format)."""

    role: str
    content: str


class ModelTokenizer(Protocol):
    """What chat envs need of a tokenizer (a ``transformers`` tokenizer fits)."""

    def apply_chat_template(
        self,
        conversation: list[Message],
        tokenize: bool = True,
        return_tensors: str | None = None,
        **kwargs: Any,
    ) -> Any: ...

    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **kwargs: Any) -> str: ...


class TaskProvider(Protocol):
    """Optional task discovery, implemented structurally by an env (no base class)."""

    def list_splits(self) -> list[Any]: ...

    def list_tasks(self, split: str) -> list[Any]: ...

    def num_tasks(self, split: str) -> int: ...

    def get_task(self, split: str, index: int) -> Any: ...

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]: ...


class Transform(abc.ABC, Generic[ObsT]):
    """Maps an observation to an observation (adds a reward, a metric...)."""

    @abc.abstractmethod
    def __call__(self, observation: ObsT) -> ObsT: ...


class Environment(abc.ABC, Generic[ActT, ObsT, StateT]):
    """Base class of upstream-style envs.

    Attributes:
        SUPPORTS_CONCURRENT_SESSIONS: the env isolates its sessions, so the server may
            run several at once (up to ``max_concurrent_envs``, or our server's limit
            when none is given). False: one session at a time.
        REQUIRES_SINGLE_THREAD_EXECUTOR: every call of a session must run on one
            thread (thread-affine libraries); our server then gives each session a
            thread of its own.
    """

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = False
    REQUIRES_SINGLE_THREAD_EXECUTOR: ClassVar[bool] = False

    rubric: Rubric | None

    def __init__(self, transform: Transform[ObsT] | None = None, rubric: Rubric | None = None) -> None:
        self.transform = transform
        self.rubric = rubric

    @abc.abstractmethod
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ObsT:
        """Start an episode; ``kwargs`` are the other keys the client sent at reset."""

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ObsT:
        """Async ``reset``; by default calls ``reset``. Override for a native one."""
        return self.reset(seed=seed, episode_id=episode_id, **kwargs)

    @abc.abstractmethod
    def step(self, action: ActT, timeout_s: float | None = None, **kwargs: Any) -> ObsT:
        """Apply one action."""

    async def step_async(self, action: ActT, timeout_s: float | None = None, **kwargs: Any) -> ObsT:
        """Async ``step``; by default calls ``step``. Override for a native one."""
        return self.step(action, timeout_s=timeout_s, **kwargs)

    @property
    @abc.abstractmethod
    def state(self) -> StateT:
        """The current episode state."""

    def get_metadata(self) -> EnvironmentMetadata:
        """What ``GET /metadata`` returns; by default named after the class."""
        name = type(self).__name__
        return EnvironmentMetadata(name=name, description=f"{name} environment", version="1.0.0")

    def _apply_transform(self, observation: ObsT) -> ObsT:
        return observation if self.transform is None else self.transform(observation)

    def _apply_rubric(self, action: ActT, observation: ObsT) -> float:
        """The rubric's score of ``(action, observation)``; 0.0 without a rubric."""
        if self.rubric is None:
            return 0.0
        return self.rubric(action, observation)  # type: ignore[no-any-return]

    async def _apply_rubric_async(self, action: ActT, observation: ObsT) -> float:
        if self.rubric is None:
            return 0.0
        result = self.rubric(action, observation)
        if inspect.isawaitable(result):
            result = await result
        return result  # type: ignore[no-any-return]

    def _reset_rubric(self) -> None:
        if self.rubric is not None:
            self.rubric.reset()

    async def _reset_rubric_async(self) -> None:
        if self.rubric is None:
            return
        reset_async = getattr(self.rubric, "reset_async", None)
        if reset_async is None:
            self.rubric.reset()
            return
        result = reset_async()
        if inspect.isawaitable(result):
            await result

    def render_web(self, observation: dict[str, Any]) -> str | None:
        """HTML drawing an observation in a web UI; None: none (our playground ignores it)."""
        return None

    def web_actions(self, observation: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """One-click ``(label, action)`` pairs for a web UI; none by default."""
        return []

    def close(self) -> None:
        """Release resources; called once when the session ends."""


class CompositeTransform(Transform[Any]):
    """Applies its transforms in order."""

    def __init__(self, transforms: Sequence[Transform[Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, observation: Any) -> Any:
        for transform in self.transforms:
            observation = transform(observation)
        return observation


class NullTransform(Transform[Any]):
    """Returns the observation unchanged."""

    def __call__(self, observation: Any) -> Any:
        return observation
