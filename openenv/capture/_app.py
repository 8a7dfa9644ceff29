"""The capture proxy's ASGI app: session routes for the trainer, model routes for the agent.

    GET    /health                          level, backend, sessions
    POST   /sessions                        mint a session: {"session_id", "capture_level", ...}
    GET    /sessions                        every session's summary
    GET    /sessions/{id}                   one session's summary
    GET    /sessions/{id}/rollout           the rollout document (upstream's shape)
    GET    /sessions/{id}/trace_entries     one entry per agent call (409 when not trainable)
    GET    /sessions/{id}/training_trace    upstream's TrainingTrace, schema 1 (409 when not trainable)
    DELETE /sessions/{id}
    GET    /v1/models                       the backend's
    POST   any dialect route                proxied (see _detection.ROUTES); the API key names the session

Session routes need ``admin_key`` when one is set. Every failure on a model route is
answered in the caller's dialect; a failed call leaves its session's graph as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ._backend import BackendStream, InferenceClient, read_capture
from ._detection import detect
from ._dialects import DIALECTS, ChatReply, Dialect
from ._errors import BadRequest, NotTrainable, UnknownDialect, UpstreamError
from ._graph import TurnNode
from ._sessions import LEVELS, Session, SessionRegistry, extract_api_key, lowest
from ._stream import StreamState
from ._trace import export_session, to_trace_entries, to_training_trace

log = logging.getLogger("openenv.capture")
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class _State:
    def __init__(self, backend: InferenceClient, capture_level: str | None, admin_key: str | None) -> None:
        self.backend, self.admin_key = backend, admin_key
        self.registry = SessionRegistry()
        self.instance_id = uuid.uuid4().hex
        self.level = capture_level  # None until probed
        self._probe_lock = asyncio.Lock()
        self.pumps: set[asyncio.Task[None]] = set()  # streams being read and recorded

    async def capture_level(self) -> str:
        """The backend's level, probed once (a failed probe is retried on the next ask)."""
        async with self._probe_lock:
            if self.level is None:
                self.level = await self.backend.probe()
                log.info("backend %s captures at level %s", self.backend.base_url, self.level)
            return self.level


def _json(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


def _plain_error(status: int, message: str) -> Response:
    return _json({"error": {"message": message, "type": "invalid_request_error"}}, status)


def create_app(
    *,
    llm_url: str,
    model: str = "",
    api_key: str | None = None,
    capture_level: str | None = None,
    admin_key: str | None = None,
    timeout_s: float = 600.0,
) -> Starlette:
    """The capture proxy in front of the chat completions server at ``llm_url`` (``.../v1``).

    ``model`` replaces the model each agent names; ``api_key`` is the backend's key (the
    agent never sees it); ``capture_level`` skips the probe; ``admin_key`` guards /sessions*.
    """
    if capture_level is not None and capture_level not in LEVELS:
        raise ValueError(f"capture_level must be one of {', '.join(LEVELS)}")
    state = _State(
        InferenceClient(llm_url, served_model=model, api_key=api_key, timeout_s=timeout_s),
        capture_level,
        admin_key,
    )

    def admin(request: Request) -> bool:
        want = state.admin_key
        return not want or secrets.compare_digest(extract_api_key(request.headers) or "", want)

    def session_or_404(request: Request) -> Session | Response:
        if not admin(request):
            return _plain_error(401, "this route needs the capture admin key")
        session = state.registry.get(request.path_params["session_id"])
        return session if session is not None else _json({"error": "unknown session"}, 404)  # upstream's body

    async def health(request: Request) -> Response:
        return _json(
            {
                "status": "ok",
                "instance": state.instance_id,
                "upstream": state.backend.base_url,
                "model": state.backend.served_model,
                "capture_level": state.level,
                "trainable": state.level == "tokens",
                "rollout_type": None
                if state.level is None
                else "train"
                if state.level == "tokens"
                else "eval",
                "sessions": len(state.registry.list_ids()),
            }
        )

    async def create_session(request: Request) -> Response:
        if not admin(request):
            return _plain_error(401, "this route needs the capture admin key")
        raw = await request.body()
        try:
            payload = (await request.json()) if raw.strip() else {}
        except ValueError:
            return _plain_error(400, "the body must be JSON")
        if not isinstance(payload, dict) or not isinstance(payload.get("metadata", {}), dict):
            return _plain_error(400, "the body must be an object; metadata an object")
        try:
            level = await state.capture_level()
        except UpstreamError as exc:
            return _plain_error(502, f"cannot probe the backend's capture level: {exc}")
        try:
            session = state.registry.create(
                payload.get("session_id"), capture_level=level, **payload.get("metadata", {})
            )
        except ValueError as exc:
            return _plain_error(409, str(exc))
        return _json(
            {
                "session_id": session.session_id,
                "capture_level": level,
                "trainable": level == "tokens",
                "rollout_type": "train" if level == "tokens" else "eval",
                "llm_url": state.backend.base_url,
                "model": state.backend.served_model,
            }
        )

    async def list_sessions(request: Request) -> Response:
        if not admin(request):
            return _plain_error(401, "this route needs the capture admin key")
        return _json({"sessions": state.registry.summary()})

    async def session_status(request: Request) -> Response:
        got = session_or_404(request)
        return got if isinstance(got, Response) else _json(got.summary())

    async def rollout(request: Request) -> Response:
        got = session_or_404(request)
        if isinstance(got, Response):
            return got
        return _json(
            export_session(got, include_discarded=request.query_params.get("include_discarded") == "true")
        )

    async def trace_entries(request: Request) -> Response:
        got = session_or_404(request)
        if isinstance(got, Response):
            return got
        try:
            entries = to_trace_entries(got.graph, export_session(got))
        except NotTrainable as exc:
            return _plain_error(409, str(exc))
        return _json({"session_id": got.session_id, "entries": entries})

    async def training_trace(request: Request) -> Response:
        got = session_or_404(request)
        if isinstance(got, Response):
            return got
        try:
            trace = to_training_trace(got.graph, export_session(got))
        except NotTrainable as exc:
            return _plain_error(409, str(exc))
        return Response(trace.model_dump_json(), media_type="application/json")

    async def delete_session(request: Request) -> Response:
        if not admin(request):
            return _plain_error(401, "this route needs the capture admin key")
        return _json({"deleted": state.registry.delete(request.path_params["session_id"])})

    async def models(request: Request) -> Response:
        try:
            return _json(await state.backend.list_models())
        except UpstreamError as exc:
            return _plain_error(502, str(exc))

    async def proxy(request: Request) -> Response:
        path = "/" + request.path_params["path"]
        try:
            dialect = DIALECTS[detect(path)]
        except UnknownDialect as exc:
            return _plain_error(404, str(exc))
        session = state.registry.resolve(request.headers, request.query_params)
        if session is None:
            return _json(
                dialect.error(401, "unknown API key: use a session id from POST /sessions as the key"), 401
            )
        try:
            body = orjson.loads(await request.body())
            if not isinstance(body, dict):
                raise BadRequest("the body must be a JSON object")
            chat = dialect.to_chat(body, path)
        except (ValueError, BadRequest) as exc:
            return _json(dialect.error(400, f"bad request: {exc}"), 400)
        streaming = dialect.wants_stream(body, path, request.query_params)
        try:
            if streaming:
                opened = await state.backend.open_stream(chat, level=session.capture_level)
            else:
                raw = await state.backend.completion(chat, level=session.capture_level)
        except UpstreamError as exc:
            session.upstream_errors += 1
            session.note(f"[ERROR] {dialect.name} call failed: {exc}")
            return _json(dialect.error(exc.status, str(exc)), exc.status)
        if streaming:
            return StreamingResponse(
                _relay(state, session, dialect, chat, body, opened),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        return _json(dialect.reply(_record(session, dialect, chat, raw), body))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        for task in list(state.pumps):  # streams still being read at shutdown
            task.cancel()
        await asyncio.gather(*state.pumps, return_exceptions=True)
        await state.backend.aclose()

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/sessions", create_session, methods=["POST"]),
        Route("/sessions", list_sessions, methods=["GET"]),
        Route("/sessions/{session_id}", session_status, methods=["GET"]),
        Route("/sessions/{session_id}", delete_session, methods=["DELETE"]),
        Route("/sessions/{session_id}/rollout", rollout, methods=["GET"]),
        Route("/sessions/{session_id}/trace_entries", trace_entries, methods=["GET"]),
        Route("/sessions/{session_id}/training_trace", training_trace, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/{path:path}", proxy, methods=["POST"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.capture = state
    return app


def _record(session: Session, dialect: Dialect, chat: dict[str, Any], raw: dict[str, Any]) -> ChatReply:
    """Record one backend reply (a chat completion) in the session's graph; ``chat`` is the
    request, built fresh from the agent's body by its dialect, so the node may keep it."""
    reply = ChatReply.read(raw)
    got = read_capture(raw)
    if got.level != session.capture_level:
        session.note(f"[WARN] call {len(session.graph)} came back at level {got.level}")
        session.capture_level = lowest(session.capture_level, got.level)
    session.last_call = time.time()
    session.graph.add_turn(
        TurnNode(
            node_id=f"turn-{len(session.graph)}-{uuid.uuid4().hex[:8]}",
            prompt_ids=got.prompt_ids,
            sampled_ids=got.sampled_ids,
            sampled_logprobs=got.logprobs,
            model=reply.model,
            finish_reason=reply.finish_reason,
            n_tools=len(chat.get("tools") or []),
            api_type=dialect.name,
            request_messages=chat["messages"],
            request_tools=chat.get("tools"),
            response_message=reply.message(),
        )
    )
    return reply


async def _pump(
    session: Session, dialect: Dialect, chat: dict[str, Any], opened: BackendStream, queue: asyncio.Queue[Any]
) -> None:
    """Read the backend's stream to its end, hand each chunk on, record the call.

    A task of its own: an agent that drops its stream does not stop the recording. A
    stream cut halfway records nothing in the graph; what it had is kept in
    ``session.incomplete`` (and counted as an upstream error)."""
    state = StreamState()
    try:
        async for raw in opened.chunks():
            queue.put_nowait((state, raw, state.feed(raw)))
    except UpstreamError as exc:
        session.upstream_errors += 1
        session.incomplete.append({"api_type": dialect.name, "error": str(exc), **state.raw()})
        session.note(f"[ERROR] {dialect.name} stream cut after {state.chunks} chunks: {exc}")
        queue.put_nowait(exc)
        return
    except BaseException:
        await opened.aclose()
        raise
    try:
        queue.put_nowait((state, _record(session, dialect, chat, state.raw())))
    except Exception as exc:  # a reply that cannot be read: the agent still gets an end
        session.upstream_errors += 1
        session.note(f"[ERROR] {dialect.name} stream could not be recorded: {exc}")
        queue.put_nowait(UpstreamError(f"the backend's stream could not be read: {exc}"))


async def _relay(
    state: _State,
    session: Session,
    dialect: Dialect,
    chat: dict[str, Any],
    body: dict[str, Any],
    opened: BackendStream,
) -> AsyncIterator[bytes]:
    """The agent's stream: each backend chunk translated into its dialect as it arrives."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    task = asyncio.create_task(_pump(session, dialect, chat, opened, queue))
    state.pumps.add(task)
    task.add_done_callback(state.pumps.discard)
    writer = dialect.streamer(body)
    while True:
        item = await queue.get()
        if isinstance(item, UpstreamError):
            for event in writer.fail(item.status, str(item)):
                yield event.encode()
            return
        if len(item) == 2:
            for event in writer.finish(item[0], item[1]):
                yield event.encode()
            return
        events = writer.chunk(*item)
        if events:
            yield "".join(events).encode()
