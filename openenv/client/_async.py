"""``AsyncEnvClient``: the asyncio client. Same API as ``EnvClient``, awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .._exceptions import ConnectionClosed, FrameTooLarge, RequestTimeout
from .._models import GENERIC_MODELS, EnvModels, StepResult
from .._protocol import AnyReply
from ._base import BaseEnvClient, ResetSpec
from ._batch import BatchItem
from ._transport import AsyncConnection

if TYPE_CHECKING:
    from ..containers._base import Provider

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


class AsyncEnvClient(BaseEnvClient[ActT, ObsT, StateT]):
    """Drive one env server over WebSocket from asyncio.

    >>> async with AsyncEnvClient("http://127.0.0.1:8000", MODELS) as env:  # doctest: +SKIP
    ...     await env.reset()
    ...     result = await env.step(EchoAction(message="hi"))
    """

    _conn: AsyncConnection | None = None

    @classmethod
    async def from_provider(
        cls,
        provider: Provider,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        **kwargs: Any,
    ) -> AsyncEnvClient[ActT, ObsT, StateT]:
        """Start a replica with ``provider`` (off the loop) and connect; ``close()`` stops it."""
        replica = await asyncio.to_thread(provider.start)
        try:
            client = cls(replica.base_url, models, **kwargs)
            client.on_close(replica.stop)
            return await client.connect()
        except BaseException:
            await asyncio.to_thread(replica.stop)
            raise

    @classmethod
    async def from_docker_image(
        cls,
        image: str,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        *,
        provider_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> AsyncEnvClient[ActT, ObsT, StateT]:
        """Run ``image`` in a container (``DockerProvider``) and connect to it."""
        from ..containers import DockerProvider

        return await cls.from_provider(DockerProvider(image, **(provider_options or {})), models, **kwargs)

    @classmethod
    async def from_env(
        cls,
        target: str,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        *,
        provider_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> AsyncEnvClient[ActT, ObsT, StateT]:
        """Serve ``target`` (what ``openenv serve`` takes) as a local process and connect."""
        from ..containers import LocalProcessProvider

        return await cls.from_provider(
            LocalProcessProvider(target, **(provider_options or {})), models, **kwargs
        )

    @classmethod
    async def from_hub(
        cls,
        repo_id: str,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        **options: Any,
    ) -> AsyncEnvClient[ActT, ObsT, StateT]:
        """``EnvClient.from_hub`` with ``await``; Hub calls and builds run off the loop."""
        from ..hub import from_hub_async

        return await from_hub_async(cls, repo_id, models, **options)  # type: ignore[no-any-return]

    async def connect(self) -> Self:
        """Open the connection now (otherwise the first call opens it)."""
        params = self._connect_params()
        if self._conn is None:
            self._conn = await self.transport.aconnect(params)
            self._connected(self._conn.subprotocol)
        return self

    async def _call(self, message: dict[str, Any], timeout_s: float | None = None) -> AnyReply:
        conn = self._conn if self._conn is not None else (await self.connect())._conn
        assert conn is not None
        frame, rid, wait = self._prepare(message, timeout_s)
        try:
            try:
                await conn.send(frame)
            except ConnectionClosed:
                # The server may have sent an error (CAPACITY_REACHED right after accept)
                # and closed before reading our frame: raise that error if it is queued.
                self._raise_if_error(self._decode(await conn.recv(1.0)))
                raise
            deadline = time.monotonic() + wait
            while True:
                reply = self._decode(await conn.recv(max(deadline - time.monotonic(), 0.0)))
                if self._is_reply_to(reply, rid):
                    return reply
        except RequestTimeout:
            if not self.extended:
                await self._drop()
            raise self._timeout_error(message, wait) from None
        except (ConnectionClosed, FrameTooLarge):
            await self._drop()
            raise

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._closed = True
        if conn is not None:
            await conn.close()

    async def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        session: str | None = None,
        timeout_s: float | None = None,
        **options: Any,
    ) -> StepResult[ObsT]:
        """Start an episode. Extra keyword arguments reach the env as reset options."""
        if self._conn is None:
            await self.connect()
        msg = self._reset_message(seed, episode_id, options, session)
        return self._result(await self._call(msg, timeout_s))

    async def step(
        self, action: ActT, *, session: str | None = None, timeout_s: float | None = None
    ) -> StepResult[ObsT]:
        if self._conn is None:
            await self.connect()
        return self._result(await self._call(self._step_message(action, session), timeout_s))

    async def state(self, *, session: str | None = None, timeout_s: float | None = None) -> StateT:
        if self._conn is None:
            await self.connect()
        return self._state(await self._call(self._with_session({"type": "state"}, session), timeout_s))

    async def reset_batch(
        self,
        sessions: Iterable[str] | Mapping[str, ResetSpec],
        *,
        seed: int | None = None,
        return_exceptions: bool = False,
        timeout_s: float | None = None,
        **options: Any,
    ) -> list[StepResult[ObsT]]:
        """Reset several named sessions in one frame (see ``EnvClient.reset_batch``)."""
        await self.connect()
        msgs = self._reset_batch_messages(sessions, seed, options)
        reply = await self._call(self._batch_message(msgs), timeout_s)
        return self._batch_results(reply, "observation", return_exceptions)

    async def step_batch(
        self, actions: Mapping[str, ActT], *, return_exceptions: bool = False, timeout_s: float | None = None
    ) -> list[StepResult[ObsT]]:
        """Step several named sessions in one frame; results in ``actions`` order."""
        await self.connect()
        msgs = [self._step_message(action, key) for key, action in actions.items()]
        reply = await self._call(self._batch_message(msgs), timeout_s)
        return self._batch_results(reply, "observation", return_exceptions)

    async def state_batch(
        self, sessions: Iterable[str], *, return_exceptions: bool = False, timeout_s: float | None = None
    ) -> list[StateT]:
        """The state of several named sessions, in one frame."""
        await self.connect()
        reply = await self._call(self._batch_message(self._keyed_messages("state", sessions)), timeout_s)
        return self._batch_results(reply, "state", return_exceptions)

    async def close_batch(self, sessions: Iterable[str], *, return_exceptions: bool = False) -> None:
        """Close several named sessions in one frame; the connection stays open."""
        await self.connect()
        reply = await self._call(self._batch_message(self._keyed_messages("close", sessions)))
        self._batch_results(reply, "closed", return_exceptions)

    async def batch(
        self, items: Iterable[BatchItem], *, return_exceptions: bool = False, timeout_s: float | None = None
    ) -> list[Any]:
        """Resets, steps, state reads and closes of named sessions in one frame
        (``openenv.client.Reset``, ``Step``, ``GetState``, ``Close``); one outcome per item,
        in order. A failed item raises ``BatchError`` (carrying every outcome) unless
        ``return_exceptions``."""
        await self.connect()
        msgs, kinds = self._item_messages(items)
        reply = await self._call(self._batch_message(msgs), timeout_s)
        return self._batch_results(reply, kinds, return_exceptions)

    async def close_session(self, session: str) -> None:
        """Close one named session; the connection stays open."""
        await self.connect()
        self._raise_if_error(await self._call(self._with_session({"type": "close"}, session)))

    async def close(self) -> None:
        """End the session and the connection. Safe to call twice."""
        conn, self._conn = self._conn, None
        self._closed = True
        try:
            if conn is not None:
                try:
                    frame, _ = self._frame({"type": "close"})
                    await conn.send(frame)
                except Exception:
                    pass
                await conn.close()
        finally:
            if self._on_close:
                await asyncio.to_thread(self._run_close_callbacks)

    async def __aenter__(self) -> Self:
        return await self.connect()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
