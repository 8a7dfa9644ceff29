"""``AsyncEnvClient``: the asyncio client. Same API as ``EnvClient``, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

from .._exceptions import ConnectError, ConnectionClosed, FrameTooLarge, RequestTimeout, SessionClosed
from .._models import GENERIC_MODELS, EnvModels, StepResult
from ._base import BaseEnvClient

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


def _ws_closed() -> Any:
    """websockets' ConnectionClosed, imported once on first use."""
    global _WS_CLOSED
    if _WS_CLOSED is None:
        from websockets.exceptions import ConnectionClosed

        _WS_CLOSED = ConnectionClosed
    return _WS_CLOSED


_WS_CLOSED: Any = None


class AsyncEnvClient(BaseEnvClient[ActT, ObsT, StateT]):
    """Drive one env server over WebSocket from asyncio.

    >>> async with AsyncEnvClient("http://127.0.0.1:8000", MODELS) as env:  # doctest: +SKIP
    ...     await env.reset()
    ...     result = await env.step(EchoAction(message="hi"))
    """

    _ws: Any = None
    _closed = False

    @classmethod
    async def from_provider(
        cls,
        provider: Any,
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

    async def connect(self) -> Self:
        """Open the connection now (otherwise the first call opens it)."""
        if self._closed:
            raise SessionClosed("this client was closed; create a new one")
        if self._ws is None:
            # Imported on first use so that importing the client stays light.
            from websockets.asyncio.client import connect

            try:
                self._ws = await connect(
                    self.url,
                    subprotocols=self.subprotocols or None,  # type: ignore[arg-type]
                    additional_headers=self.headers or None,
                    compression=None,
                    max_size=self.max_frame_bytes,
                    open_timeout=self.connect_timeout_s,
                    ping_interval=20,
                    ping_timeout=20,
                )
            except (OSError, TimeoutError) as exc:
                raise ConnectError(f"cannot connect to {self.url}: {exc}") from None
            except Exception as exc:  # websockets' handshake errors
                raise ConnectError(f"handshake with {self.url} failed: {exc}") from None
            self.extended = self._ws.subprotocol is not None
        return self

    async def _call(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        ws = self._ws if self._ws is not None else (await self.connect())._ws
        WSClosed = _ws_closed()
        frame, rid = self._frame(message)
        timeout = self.timeout_s if timeout_s is None else timeout_s
        try:
            try:
                await ws.send(frame)
            except WSClosed as closed:
                # The server may have sent an error (CAPACITY_REACHED right after accept)
                # and closed before reading our frame: raise that error if it is queued.
                try:
                    async with asyncio.timeout(1.0):
                        queued = self._decode(await ws.recv())
                except (WSClosed, TimeoutError):
                    raise closed from None
                self._raise_if_error(queued)
                raise
            async with asyncio.timeout(timeout):
                while True:
                    reply = self._decode(await ws.recv())
                    if self._is_reply_to(reply, rid):
                        return reply
        except TimeoutError:
            if not self.extended:
                await self._drop()
            raise RequestTimeout(f"no reply within {timeout} s") from None
        except WSClosed as exc:
            await self._drop()
            rcvd = exc.rcvd
            if rcvd is not None and rcvd.code == 1009:
                raise FrameTooLarge("the server closed the connection: frame too large (1009)") from None
            code = rcvd.code if rcvd else None
            reason = rcvd.reason if rcvd else ""
            raise ConnectionClosed(
                f"connection closed (code {code}{': ' + reason if reason else ''})", code, reason
            ) from None

    async def _drop(self) -> None:
        ws, self._ws = self._ws, None
        self._closed = True
        if ws is not None:
            await ws.close()

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
        if self._ws is None:
            await self.connect()
        msg = self._reset_message(seed, episode_id, options, session)
        return self._result(await self._call(msg, timeout_s))

    async def step(
        self, action: ActT, *, session: str | None = None, timeout_s: float | None = None
    ) -> StepResult[ObsT]:
        if self._ws is None:
            await self.connect()
        return self._result(await self._call(self._step_message(action, session), timeout_s))

    async def state(self, *, session: str | None = None, timeout_s: float | None = None) -> StateT:
        await self.connect()
        return self._state(await self._call(self._with_session({"type": "state"}, session), timeout_s))

    async def reset_batch(
        self,
        sessions: Iterable[str],
        *,
        seed: int | None = None,
        return_exceptions: bool = False,
        **options: Any,
    ) -> list[StepResult[ObsT]]:
        """Reset several named sessions in one frame; ``seed`` (if any) is offset per session."""
        await self.connect()
        msgs = [
            self._reset_message(None if seed is None else seed + i, None, options, key)
            for i, key in enumerate(sessions)
        ]
        reply = await self._call(self._batch_message(msgs))
        return self._batch_results(reply, "observation", return_exceptions)

    async def step_batch(
        self, actions: Mapping[str, ActT], *, return_exceptions: bool = False
    ) -> list[StepResult[ObsT]]:
        """Step several named sessions in one frame; results in ``actions`` order."""
        await self.connect()
        msgs = [self._step_message(action, key) for key, action in actions.items()]
        reply = await self._call(self._batch_message(msgs))
        return self._batch_results(reply, "observation", return_exceptions)

    async def close_session(self, session: str) -> None:
        """Close one named session; the connection stays open."""
        await self.connect()
        self._raise_if_error(await self._call(self._with_session({"type": "close"}, session)))

    async def close(self) -> None:
        """End the session and the connection. Safe to call twice."""
        ws, self._ws = self._ws, None
        self._closed = True
        try:
            if ws is not None:
                try:
                    frame, _ = self._frame({"type": "close"})
                    await ws.send(frame)
                except Exception:
                    pass
                await ws.close()
        finally:
            if self._on_close:
                await asyncio.to_thread(self._run_close_callbacks)

    async def __aenter__(self) -> Self:
        return await self.connect()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
