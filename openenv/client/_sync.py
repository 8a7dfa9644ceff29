"""``EnvClient``: the blocking client. Plain calls, no event loop, no helper thread."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .._exceptions import ConnectionClosed, FrameTooLarge, RequestTimeout
from .._models import GENERIC_MODELS, EnvModels, StepResult
from .._protocol import AnyReply
from ._base import BaseEnvClient, ResetSpec
from ._batch import BatchItem
from ._transport import Connection

if TYPE_CHECKING:
    from ..containers._base import Provider

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


class EnvClient(BaseEnvClient[ActT, ObsT, StateT]):
    """Drive one env server over WebSocket, synchronously.

    >>> from echo_env import MODELS, EchoAction          # doctest: +SKIP
    >>> with EnvClient("http://127.0.0.1:8000", MODELS) as env:   # doctest: +SKIP
    ...     env.reset(seed=1)
    ...     result = env.step(EchoAction(message="hi"))
    """

    _conn: Connection | None = None

    @classmethod
    def from_provider(
        cls,
        provider: Provider,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        **kwargs: Any,
    ) -> EnvClient[ActT, ObsT, StateT]:
        """Start a replica with ``provider`` and connect; ``close()`` stops the replica."""
        replica = provider.start()
        try:
            client = cls(replica.base_url, models, **kwargs)
            client.on_close(replica.stop)
            return client.connect()
        except BaseException:
            replica.stop()
            raise

    @classmethod
    def from_docker_image(
        cls,
        image: str,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        *,
        provider_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> EnvClient[ActT, ObsT, StateT]:
        """Run ``image`` in a container (``DockerProvider``) and connect to it.

        ``provider_options`` go to ``DockerProvider`` (``env``, ``cpus``, ``memory``,
        ``start_timeout_s``); the rest to the client. ``close()`` stops the container.
        """
        from ..containers import DockerProvider

        return cls.from_provider(DockerProvider(image, **(provider_options or {})), models, **kwargs)

    @classmethod
    def from_env(
        cls,
        target: str,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        *,
        provider_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> EnvClient[ActT, ObsT, StateT]:
        """Serve ``target`` (what ``openenv serve`` takes) as a local process and connect."""
        from ..containers import LocalProcessProvider

        return cls.from_provider(LocalProcessProvider(target, **(provider_options or {})), models, **kwargs)

    @classmethod
    def from_hub(
        cls,
        repo_id: str,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        **options: Any,
    ) -> EnvClient[ActT, ObsT, StateT]:
        """Connect to the env published as Hugging Face Space ``repo_id`` (``openenv[hub]``).

        Default: the live Space (a private one gets the token as ``Authorization``).
        ``use_docker=True, trust_remote_code=True``: build and run its image locally.
        See ``openenv.hub.resolve_hub_target`` for the options.
        """
        from ..hub import from_hub

        return from_hub(cls, repo_id, models, **options)  # type: ignore[no-any-return]

    def connect(self) -> Self:
        """Open the connection now (otherwise the first call opens it)."""
        params = self._connect_params()
        if self._conn is None:
            self._conn = self.transport.connect(params)
            self._connected(self._conn.subprotocol)
        return self

    def _call(self, message: dict[str, Any], timeout_s: float | None = None) -> AnyReply:
        conn = self._conn if self._conn is not None else self.connect()._conn
        assert conn is not None
        frame, rid, wait = self._prepare(message, timeout_s)
        try:
            try:
                conn.send(frame)
            except ConnectionClosed:
                # The server may have sent an error (CAPACITY_REACHED right after accept)
                # and closed before reading our frame: raise that error if it is queued.
                self._raise_if_error(self._decode(conn.recv(1.0)))
                raise
            deadline = time.monotonic() + wait
            while True:
                reply = self._decode(conn.recv(max(deadline - time.monotonic(), 0.0)))
                if self._is_reply_to(reply, rid):
                    return reply
        except RequestTimeout:
            if not self.extended:
                # Without ids a late reply would be read as the next answer: drop the socket.
                self._drop()
            raise self._timeout_error(message, wait) from None
        except (ConnectionClosed, FrameTooLarge):
            # The socket is gone either way: close it and refuse later use.
            self._drop()
            raise

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._closed = True
        if conn is not None:
            conn.close()

    def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        session: str | None = None,
        timeout_s: float | None = None,
        **options: Any,
    ) -> StepResult[ObsT]:
        """Start an episode. Extra keyword arguments reach the env as reset options."""
        self.connect()
        return self._result(self._call(self._reset_message(seed, episode_id, options, session), timeout_s))

    def step(
        self, action: ActT, *, session: str | None = None, timeout_s: float | None = None
    ) -> StepResult[ObsT]:
        self.connect()
        return self._result(self._call(self._step_message(action, session), timeout_s))

    def state(self, *, session: str | None = None, timeout_s: float | None = None) -> StateT:
        self.connect()
        return self._state(self._call(self._with_session({"type": "state"}, session), timeout_s))

    def reset_batch(
        self,
        sessions: Iterable[str] | Mapping[str, ResetSpec],
        *,
        seed: int | None = None,
        return_exceptions: bool = False,
        timeout_s: float | None = None,
        **options: Any,
    ) -> list[StepResult[ObsT]]:
        """Reset several named sessions in one frame.

        ``sessions`` is a list of names, or a mapping name -> that item's ``seed``,
        ``episode_id``, ``timeout_s`` and options (e.g. G sessions on one task, B tasks).
        With a list, ``seed`` is offset per item: item ``i`` gets ``seed + i``. Shared
        ``options`` reach every item. A failed item raises ``BatchError`` (carrying every
        item's outcome) unless ``return_exceptions``.
        """
        self.connect()
        msgs = self._reset_batch_messages(sessions, seed, options)
        reply = self._call(self._batch_message(msgs), timeout_s)
        return self._batch_results(reply, "observation", return_exceptions)

    def step_batch(
        self, actions: Mapping[str, ActT], *, return_exceptions: bool = False, timeout_s: float | None = None
    ) -> list[StepResult[ObsT]]:
        """Step several named sessions in one frame; results in ``actions`` order. Each
        item runs under its own deadline (``timeout_s``): a straggler fails alone."""
        self.connect()
        msgs = [self._step_message(action, key) for key, action in actions.items()]
        reply = self._call(self._batch_message(msgs), timeout_s)
        return self._batch_results(reply, "observation", return_exceptions)

    def state_batch(
        self, sessions: Iterable[str], *, return_exceptions: bool = False, timeout_s: float | None = None
    ) -> list[StateT]:
        """The state of several named sessions, in one frame."""
        self.connect()
        reply = self._call(self._batch_message(self._keyed_messages("state", sessions)), timeout_s)
        return self._batch_results(reply, "state", return_exceptions)

    def close_batch(self, sessions: Iterable[str], *, return_exceptions: bool = False) -> None:
        """Close several named sessions in one frame; the connection stays open."""
        self.connect()
        reply = self._call(self._batch_message(self._keyed_messages("close", sessions)))
        self._batch_results(reply, "closed", return_exceptions)

    def batch(
        self, items: Iterable[BatchItem], *, return_exceptions: bool = False, timeout_s: float | None = None
    ) -> list[Any]:
        """Resets, steps, state reads and closes of named sessions in one frame
        (``openenv.client.Reset``, ``Step``, ``GetState``, ``Close``); one outcome per item,
        in order. A failed item raises ``BatchError`` (carrying every outcome) unless
        ``return_exceptions``."""
        self.connect()
        msgs, kinds = self._item_messages(items)
        reply = self._call(self._batch_message(msgs), timeout_s)
        return self._batch_results(reply, kinds, return_exceptions)

    def close_session(self, session: str) -> None:
        """Close one named session; the connection stays open."""
        self.connect()
        self._raise_if_error(self._call(self._with_session({"type": "close"}, session)))

    def close(self) -> None:
        """End the session and the connection. Safe to call twice."""
        conn, self._conn = self._conn, None
        self._closed = True
        try:
            if conn is not None:
                try:
                    frame, _ = self._frame({"type": "close"})
                    conn.send(frame)
                except Exception:
                    pass
                conn.close()
        finally:
            self._run_close_callbacks()

    def __enter__(self) -> Self:
        return self.connect()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
