"""Environment base classes: behaviour only, no I/O.

Write an env as a sync class (``Environment``) or an async one (``AsyncEnvironment``).
The three models come from the generic parameters::

    class EchoEnv(Environment[EchoAction, EchoObservation, State]):
        def reset(self, *, seed=None, episode_id=None, options=None) -> EchoObservation: ...
        def step(self, action: EchoAction) -> EchoObservation: ...
        def state(self) -> State: ...

The server builds one instance per session. How a sync env's methods are called is
its ``execution`` (see ``Execution``); async envs always run on the event loop.
"""

from __future__ import annotations

import abc
import contextlib
from enum import Enum
from typing import Any, ClassVar, Generic, TypeVar, get_args, get_origin

from pydantic import BaseModel

from ._models import Action, EnvironmentMetadata, Observation, State

ActT = TypeVar("ActT", bound=Action)
ObsT = TypeVar("ObsT", bound=Observation)
StateT = TypeVar("StateT", bound=State)


class Execution(Enum):
    """Where the server runs a sync env's ``reset``/``step``/``state``/``close``.

    Attributes:
        AUTO: measured on worker threads, then on the event loop once proven faster
            than the server's ``slow_call_s``; back to threads when calls on the loop
            are slow again (three close together, or one far slower).
        INLINE: always on the event loop. For envs whose calls never block.
        THREAD: on a shared pool of worker threads. For blocking or slow envs.
        DEDICATED_THREAD: one thread per session that also constructs the env and
            runs every call: for thread-affine libraries such as Playwright.
    """

    AUTO = "auto"
    INLINE = "inline"
    THREAD = "thread"
    DEDICATED_THREAD = "dedicated_thread"


class _EnvBase(Generic[ActT, ObsT, StateT]):
    action_model: ClassVar[type[Action]] = Action
    observation_model: ClassVar[type[Observation]] = Observation
    state_model: ClassVar[type[State]] = State
    #: Upper bound on concurrent sessions this env supports; None = the server's limit.
    max_sessions: ClassVar[int | None] = None
    #: Name and description for ``/metadata``; default: class name and first docstring line.
    env_name: ClassVar[str | None] = None
    env_description: ClassVar[str | None] = None
    env_version: ClassVar[str | None] = None
    #: Reset options model: the options a client sends at reset are validated against it
    #: (a ``VALIDATION_ERROR`` when they do not fit) and ``reset`` receives the model
    #: instance as ``options``. Published in ``/schema`` as ``reset_options``. None: a dict.
    reset_options_model: ClassVar[type[BaseModel] | None] = None
    #: Deadline in seconds for each call of this env; None: the server's ``call_timeout_s``.
    call_timeout_s: ClassVar[float | None] = None

    @classmethod
    def process_resources(
        cls, **env_kwargs: Any
    ) -> contextlib.AbstractContextManager[Any] | contextlib.AbstractAsyncContextManager[Any] | None:
        """Something built once per server process and shared by all its sessions.

        Return a context manager (sync or async; None: nothing to share). The server
        enters it at startup (a sync one off the event loop), exits it at shutdown, and
        builds each session's env as ``cls(resources=<its value>, **env_kwargs)``.
        ``env_kwargs`` are the server's constructor arguments (``--env-kwargs``).
        """
        return None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):  # its own: a subclass keeps what its parent set
            origin = get_origin(base)
            if not (isinstance(origin, type) and origin.__dict__.get("_is_env_root")):
                continue
            names = ("action_model", "observation_model", "state_model")
            for name, arg in zip(names, get_args(base), strict=False):
                if name not in cls.__dict__ and isinstance(arg, type) and arg is not Any:
                    if not issubclass(arg, BaseModel):
                        raise TypeError(f"{cls.__name__}: {name} {arg!r} is not a pydantic model")
                    setattr(cls, name, arg)

    @classmethod
    def health(cls) -> dict[str, Any]:
        """Extra fields for ``GET /health`` beside ``"status"`` (e.g. the sandbox level in
        force in this process). Empty by default: ``/health`` is then upstream's exact
        ``{"status": "healthy"}``. Called per request: keep it cheap."""
        return {}

    @classmethod
    def metadata(cls) -> EnvironmentMetadata:
        """What ``GET /metadata`` returns for this env."""
        doc = (cls.__doc__ or "").strip()
        return EnvironmentMetadata(
            name=cls.env_name or cls.__name__,
            description=cls.env_description or (doc.splitlines()[0].strip() if doc else cls.__name__),
            version=cls.env_version,
            readme_content=None,
        )


class Environment(_EnvBase[ActT, ObsT, StateT], abc.ABC):
    """A sync environment. Subclass with concrete models as generic parameters."""

    execution: ClassVar[Execution] = Execution.AUTO
    #: ``DEDICATED_THREAD``: a closed session's thread may serve a later session. Only
    #: for an env that leaves nothing on its thread (a ``threading.local``, an event loop,
    #: a library's per-thread state); otherwise each session gets a thread no session ran on.
    reuse_session_thread: ClassVar[bool] = False
    _is_env_root: ClassVar[bool] = True

    @abc.abstractmethod
    def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Any = None,
    ) -> ObsT:
        """Start an episode. ``options`` holds any other keys the client sent (a
        ``reset_options_model`` instance when the env declares one)."""

    @abc.abstractmethod
    def step(self, action: ActT) -> ObsT:
        """Apply one action."""

    @abc.abstractmethod
    def state(self) -> StateT:
        """The current episode state."""

    def close(self) -> None:
        """Release resources. Called once when the session ends, on every path."""


class AsyncEnvironment(_EnvBase[ActT, ObsT, StateT], abc.ABC):
    """An async environment; its coroutines run on the server's event loop."""

    _is_env_root: ClassVar[bool] = True

    @abc.abstractmethod
    async def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Any = None,
    ) -> ObsT:
        """Start an episode. ``options`` holds any other keys the client sent."""

    @abc.abstractmethod
    async def step(self, action: ActT) -> ObsT:
        """Apply one action."""

    @abc.abstractmethod
    async def state(self) -> StateT:
        """The current episode state."""

    async def close(self) -> None:
        """Release resources. Called once when the session ends, on every path."""


AnyEnv = Environment[Any, Any, Any] | AsyncEnvironment[Any, Any, Any]
EnvClass = type[Environment[Any, Any, Any]] | type[AsyncEnvironment[Any, Any, Any]]
