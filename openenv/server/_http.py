"""HTTP routes: upstream's stateless ``/reset`` ``/step`` ``/state`` plus real sessions.

Upstream compatibility: ``/reset``, ``/step`` and ``/state`` each build a throwaway env
(as upstream 0.10 does) and answer in upstream's shapes. Our ``/step`` and ``/state``
reset the throwaway env first, so an env that requires a reset still answers.

Extension: ``/sessions`` holds real multi-step episodes over HTTP::

    POST   /sessions                  -> 201 {"session_id"}
    GET    /sessions                  -> {"active_sessions", "max_sessions"}
    POST   /sessions/{id}/reset       -> observation data (as a WS observation reply)
    POST   /sessions/{id}/step        -> observation data; body {"action": {...}}
    GET    /sessions/{id}/state       -> state
    DELETE /sessions/{id}             -> {"session_id", "closed": true}

Errors: the wire error's HTTP status and ``{"detail": ..., "error": {"code", "message"}}``.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._env import EnvClass
from .._exceptions import InvalidJSON, ValidationFailed, WireError
from .._protocol import ResetData, observation_data
from ._jsonrpc import PARSE_ERROR, mcp_not_supported, rpc_error
from ._sessions import Session, SessionManager


class StepRequestBase(BaseModel):
    """Body of ``POST /step``: upstream's fields; ``timeout_s``/``request_id`` are accepted."""

    model_config = ConfigDict(extra="allow")

    timeout_s: float | None = Field(default=None, gt=0)
    request_id: str | None = None


def step_request_model(action_model: type[BaseModel]) -> type[StepRequestBase]:
    return create_model("StepRequest", __base__=StepRequestBase, action=(action_model, ...))


def body_error(exc: ValidationError) -> WireError:
    """A request body's validation error in upstream's (FastAPI's) shape: action errors
    relative to the action (``["message"]``), other fields under ``"body"``."""
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    if errors and errors[0]["type"] == "json_invalid":
        detail = [{"type": "json_invalid", "loc": ["body", 0], "msg": "JSON decode error"}]
        return InvalidJSON(errors[0]["msg"], errors=detail)
    shaped = []
    for e in errors:
        loc = list(e["loc"])
        loc = loc[1:] if loc[:1] == ["action"] and len(loc) > 1 else ["body", *loc]
        shaped.append({"type": e["type"], "loc": loc, "msg": e["msg"]})
    return ValidationFailed(f"Invalid request body: {errors[0]['msg']}", errors=shaped)


def json_response(content: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(content), status_code=status, media_type="application/json")


def wire_error_response(err: WireError) -> Response:
    detail = err.details.get("errors", err.message)
    return json_response({"detail": detail, "error": err.to_wire()}, err.http_status)


def _upstream_shape(obs: Any) -> dict[str, Any]:
    data = observation_data(obs, binary=False, extended=False)
    data.setdefault("metadata", None)  # upstream's HTTP replies always carry the key
    return data


class HttpApi:
    """The HTTP surface of one env app."""

    def __init__(self, env_class: EnvClass, manager: SessionManager) -> None:
        self.env_class = env_class
        self.manager = manager
        self._reset_adapter: TypeAdapter[ResetData] = TypeAdapter(ResetData)
        self.step_model = step_request_model(env_class.action_model)
        self._step_adapter: TypeAdapter[Any] = TypeAdapter(self.step_model)

    def routes(self) -> list[Route]:
        return [
            Route("/health", self.health, methods=["GET"]),
            Route("/metadata", self.metadata, methods=["GET"]),
            Route("/schema", self.schema, methods=["GET"]),
            Route("/reset", self.reset, methods=["POST"]),
            Route("/step", self.step, methods=["POST"]),
            Route("/state", self.state, methods=["GET"]),
            Route("/mcp", self.mcp, methods=["POST"]),
            Route("/sessions", self.sessions_open, methods=["POST"]),
            Route("/sessions", self.sessions_stats, methods=["GET"]),
            Route("/sessions/{sid}/reset", self.session_reset, methods=["POST"]),
            Route("/sessions/{sid}/step", self.session_step, methods=["POST"]),
            Route("/sessions/{sid}/state", self.session_state, methods=["GET"]),
            Route("/sessions/{sid}", self.session_close, methods=["DELETE"]),
        ]

    # --- helpers ------------------------------------------------------------------

    async def _parse(self, request: Request, adapter: TypeAdapter[Any]) -> Any:
        body = await request.body()
        try:
            return adapter.validate_json(body or b"{}")
        except ValidationError as exc:
            raise body_error(exc) from None

    async def _throwaway(self) -> Session:
        return await self.manager.open(owner=None)

    # --- upstream routes ----------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return json_response({"status": "healthy"})

    async def metadata(self, request: Request) -> Response:
        return json_response(self.env_class.metadata().model_dump())

    async def schema(self, request: Request) -> Response:
        cls = self.env_class
        obs = cls.observation_model.model_json_schema()
        return json_response(
            {
                "action": cls.action_model.model_json_schema(),
                "observation": obs,
                "state": cls.state_model.model_json_schema(),
                "reset_observation": obs,
            }
        )

    async def reset(self, request: Request) -> Response:
        data = await self._parse(request, self._reset_adapter)
        session = await self._throwaway()
        try:
            obs = await session.reset(data)
        finally:
            await session.close("stateless request")
        return json_response(_upstream_shape(obs))

    async def step(self, request: Request) -> Response:
        body = await self._parse(request, self._step_adapter)
        session = await self._throwaway()
        try:
            await session.reset(ResetData())
            obs = await session.step(body.action)
        finally:
            await session.close("stateless request")
        return json_response(_upstream_shape(obs))

    async def state(self, request: Request) -> Response:
        session = await self._throwaway()
        try:
            await session.reset(ResetData())
            state = await session.get_state()
        finally:
            await session.close("stateless request")
        return json_response(state.model_dump(mode="json"))

    async def mcp(self, request: Request) -> Response:
        try:
            payload = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return json_response(rpc_error(None, PARSE_ERROR, "Parse error"))
        return json_response(mcp_not_supported(payload))

    # --- session routes (extension) -----------------------------------------------

    async def sessions_open(self, request: Request) -> Response:
        session = await self.manager.open(owner=None)
        return json_response({"session_id": session.id}, 201)

    async def sessions_stats(self, request: Request) -> Response:
        return json_response(self.manager.stats())

    async def session_reset(self, request: Request) -> Response:
        session = self.manager.get(request.path_params["sid"])
        data = await self._parse(request, self._reset_adapter)
        obs = await session.reset(data)
        return json_response(observation_data(obs, binary=False, extended=True))

    async def session_step(self, request: Request) -> Response:
        session = self.manager.get(request.path_params["sid"])
        body = await self._parse(request, self._step_adapter)
        obs = await session.step(body.action)
        return json_response(observation_data(obs, binary=False, extended=True))

    async def session_state(self, request: Request) -> Response:
        session = self.manager.get(request.path_params["sid"])
        state = await session.get_state()
        return json_response(state.model_dump(mode="json"))

    async def session_close(self, request: Request) -> Response:
        session = self.manager.get(request.path_params["sid"])
        await session.close("closed by client")
        return json_response({"session_id": session.id, "closed": True})


async def handle_wire_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, WireError)
    return wire_error_response(exc)
