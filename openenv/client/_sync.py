"""``EnvClient``: the blocking client. Plain calls, no event loop, no helper thread."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

from .._exceptions import ConnectionClosed, FrameTooLarge, RequestTimeout, SessionClosed
from .._models import GENERIC_MODELS, EnvModels, StepResult
from ._base import BaseEnvClient
from ._wsync import SyncWebSocket

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

    _ws: SyncWebSocket | None = None
    _closed = False

    @classmethod
    def from_provider(
        cls,
        provider: Any,
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

    def connect(self) -> Self:
        """Open the connection now (otherwise the first call opens it)."""
        if self._closed:
            raise SessionClosed("this client was closed; create a new one")
        if self._ws is None:
            self._ws = SyncWebSocket(
                self.url,
                subprotocols=self.subprotocols,
                headers=self.headers,
                max_size=self.max_frame_bytes,
                connect_timeout_s=self.connect_timeout_s,
            )
            self.extended = self._ws.subprotocol is not None
        return self

    def _call(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        ws = self.connect()._ws
        assert ws is not None
        frame, rid = self._frame(message)
        timeout = self.timeout_s if timeout_s is None else timeout_s
        try:
            try:
                ws.send(frame)
            except ConnectionClosed:
                # The server may have sent an error (CAPACITY_REACHED right after accept)
                # and closed before reading our frame: raise that error if it is queued.
                self._raise_if_error(self._decode(ws.recv(1.0)))
                raise
            while True:
                reply = self._decode(ws.recv(timeout))
                if self._is_reply_to(reply, rid):
                    return reply
        except RequestTimeout:
            if not self.extended:
                # Without ids a late reply would be read as the next answer: drop the socket.
                self._drop()
            raise
        except (ConnectionClosed, FrameTooLarge):
            # The socket is gone either way: close it and refuse later use (as AsyncEnvClient).
            self._drop()
            raise

    def _drop(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        self._closed = True

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
        sessions: Iterable[str],
        *,
        seed: int | None = None,
        return_exceptions: bool = False,
        **options: Any,
    ) -> list[StepResult[ObsT]]:
        """Reset several named sessions in one frame; ``seed`` (if any) is offset per session."""
        self.connect()
        msgs = [
            self._reset_message(None if seed is None else seed + i, None, options, key)
            for i, key in enumerate(sessions)
        ]
        return self._batch_results(self._call(self._batch_message(msgs)), "observation", return_exceptions)

    def step_batch(
        self, actions: Mapping[str, ActT], *, return_exceptions: bool = False
    ) -> list[StepResult[ObsT]]:
        """Step several named sessions in one frame; results in ``actions`` order."""
        self.connect()
        msgs = [self._step_message(action, key) for key, action in actions.items()]
        return self._batch_results(self._call(self._batch_message(msgs)), "observation", return_exceptions)

    def close_session(self, session: str) -> None:
        """Close one named session; the connection stays open."""
        self.connect()
        self._raise_if_error(self._call(self._with_session({"type": "close"}, session)))

    def close(self) -> None:
        """End the session and the connection. Safe to call twice."""
        ws, self._ws = self._ws, None
        self._closed = True
        try:
            if ws is not None:
                try:
                    frame, _ = self._frame({"type": "close"})
                    ws.send(frame)
                except Exception:
                    pass
                ws.close()
        finally:
            self._run_close_callbacks()

    def __enter__(self) -> Self:
        return self.connect()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
