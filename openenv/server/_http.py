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

from typing import Annotated, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._env import EnvClass
from .._exceptions import (
    CapacityReached,
    DeadlineExceeded,
    ExecutionError,
    FactoryError,
    InvalidJSON,
    ResetRequired,
    SessionBusy,
    SessionClosed,
    SessionNotFound,
    TaskNotFound,
    ValidationFailed,
    WireError,
)
from .._models import EnvironmentMetadata
from .._protocol import (
    SCAN_FROM,
    JsonNumber,
    JsonSeed,
    ResetData,
    _too_many_values,
    observation_data,
    too_many_json_values,
)
from ._jsonrpc import PARSE_ERROR, mcp_not_supported, rpc_error
from ._openapi import HTTP_ONLY_CODES, ApiRoute, Endpoint, Operation, operation_id, reply_schema
from ._sessions import Session, SessionManager

#: Observation fields that travel beside the observation, not in it.
_REPLY_EXCLUDE = {"reward", "done", "truncated"}
_REWARD = {"anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "number"}, {"type": "null"}]}
_OBJECT = {"type": "object"}
_HEALTH = {"type": "object", "required": ["status"], "properties": {"status": {"const": "healthy"}}}
_SCHEMAS = {
    "type": "object",
    "required": ["action", "observation", "state", "reset_observation"],
    "properties": {k: _OBJECT for k in ("action", "observation", "state", "reset_observation")},
}
_JSONRPC = {
    "type": "object",
    "required": ["jsonrpc"],
    "properties": {"jsonrpc": {"const": "2.0"}, "id": {}, "result": {}, "error": _OBJECT},
}
_SESSION_OPENED = {
    "type": "object", "required": ["session_id"], "properties": {"session_id": {"type": "string"}}
}
_SESSION_STATS = {
    "type": "object",
    "required": ["active_sessions", "max_sessions"],
    "properties": {"active_sessions": {"type": "integer"}, "max_sessions": {"type": "integer"}},
}
_SESSION_CLOSED = {
    "type": "object",
    "required": ["session_id", "closed"],
    "properties": {"session_id": {"type": "string"}, "closed": {"const": True}},
}

#: ``POST /sessions`` links its reply's ``session_id`` to the session routes (a stateful
#: client, or fuzzer, follows them: open, reset, step, state, close).
_SESSION_LINKS = {
    name: {"operationId": operation_id(method, route), "parameters": {"sid": "$response.body#/session_id"}}
    for name, method, route in (
        ("ResetSession", "POST", "session_reset"),
        ("StepSession", "POST", "session_step"),
        ("SessionState", "GET", "session_state"),
        ("CloseSession", "DELETE", "session_close"),
    )
}


#: On ``/sessions/{sid}/reset`` options that name no task are 400, code ``TASK_NOT_FOUND``
#: (as upstream's Task API answers an index past the end): there, 404 says the session is gone.
_NO_TASK_400 = {400: [TaskNotFound.code.value]}


def _ref_schema(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def reset_request_model(env_class: EnvClass) -> type[BaseModel]:
    """The documented body of a reset: ``seed``, ``episode_id`` and the env's reset
    options (its ``reset_options_model``'s fields; any keys without one)."""
    options = getattr(env_class, "reset_options_model", None)
    if options is None:
        return ResetData
    return create_model(
        "ResetRequest",
        __base__=options,
        seed=(JsonSeed | None, None),  # no bool for int
        episode_id=(str | None, Field(default=None, max_length=255)),
    )


class StepRequestBase(BaseModel):
    """Body of ``POST /step``: upstream's fields. ``timeout_s`` is the step's deadline;
    ``request_id`` is echoed in the ``X-Request-Id`` response header."""

    model_config = ConfigDict(extra="allow")

    timeout_s: Annotated[JsonNumber, Field(ge=0.001, le=86400)] | None = None  # as the WS frame's
    #: printable ASCII: it goes into a response header (found by the OpenAPI fuzzer)
    request_id: str | None = Field(default=None, pattern=r"^[!-~]{1,200}$")


def _echo_id(response: Response, request_id: str | None) -> Response:
    if request_id is not None:
        response.headers["x-request-id"] = request_id
    return response


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


def wire_error_response(err: WireError, status: int | None = None) -> Response:
    detail = err.details.get("errors", err.message)
    return json_response({"detail": detail, "error": err.to_wire()}, status or err.http_status)


def _upstream_shape(obs: Any) -> dict[str, Any]:
    data = observation_data(obs, binary=False, extended=False)
    data.setdefault("metadata", None)  # upstream's HTTP replies always carry the key
    return data


_HEALTHY = {"status": "healthy"}


class HttpApi:
    """The HTTP surface of one env app."""

    def __init__(self, env_class: EnvClass, manager: SessionManager) -> None:
        self.env_class = env_class
        self.manager = manager
        self._reset_adapter: TypeAdapter[ResetData] = TypeAdapter(ResetData)
        self.step_model = step_request_model(env_class.action_model)
        self._step_adapter: TypeAdapter[Any] = TypeAdapter(self.step_model)
        self.reset_model = reset_request_model(env_class)

    @property
    def stateless_observation(self) -> dict[str, Any]:
        """Schema of upstream's observation reply (``metadata`` always present)."""
        return {
            "type": "object",
            "required": ["observation", "reward", "done", "metadata"],
            "properties": {
                "observation": _ref_schema(f"{self.env_class.observation_model.__name__}Reply"),
                "reward": _REWARD,
                "done": {"type": "boolean"},
                "metadata": {"anyOf": [_OBJECT, {"type": "null"}]},
            },
            "additionalProperties": False,
        }

    @property
    def session_observation(self) -> dict[str, Any]:
        """Schema of a session's observation reply (``truncated``; ``metadata`` when set)."""
        schema = self.stateless_observation
        schema["required"] = ["observation", "reward", "done", "truncated"]
        schema["properties"] = {**schema["properties"], "truncated": {"type": "boolean"}, "metadata": _OBJECT}
        return schema

    def routes(self) -> list[Route]:
        """One ``ApiRoute`` per path, each method with its ``Operation`` (for OpenAPI)."""
        act, state = self.env_class.action_model.__name__, _ref_schema(self.env_class.state_model.__name__)
        calls = (ExecutionError, FactoryError, CapacityReached, DeadlineExceeded)
        opening = (CapacityReached, FactoryError)
        resets = (TaskNotFound,)  # an env's reset options name a task that is not there
        body = (ValidationFailed, InvalidJSON)
        held = (SessionNotFound, SessionBusy, SessionClosed, ExecutionError, DeadlineExceeded)
        stateless = _ref_schema("StatelessObservation")
        extended = _ref_schema("SessionObservation")
        reset, step = self.reset_model, self.step_model
        table: list[tuple[str, str, dict[str, tuple[Endpoint, Operation]]]] = [
            ("/health", "health", {"GET": (self.health, Operation("Liveness", _HEALTH))}),
            ("/metadata", "metadata", {"GET": (self.metadata, Operation("Metadata", EnvironmentMetadata))}),
            ("/schema", "schema", {"GET": (self.schema, Operation("JSON Schemas of the models", _SCHEMAS))}),
            ("/reset", "reset", {"POST": (self.reset, Operation(
                "Stateless reset of a throwaway env (upstream's shape)", stateless, body=reset,
                errors=(*body, *calls, *resets)))}),
            ("/step", "step", {"POST": (self.step, Operation(
                f"Stateless step ({act}) of a reset throwaway env (upstream's shape)", stateless, body=step,
                errors=(*body, *calls)))}),
            ("/state", "state", {"GET": (self.state, Operation(
                "State of a reset throwaway env", state, errors=calls))}),
            ("/mcp", "mcp", {"POST": (self.mcp, Operation(
                "JSON-RPC 2.0 (MCP); errors are JSON-RPC error objects", _JSONRPC))}),
            ("/sessions", "sessions", {
                "POST": (self.sessions_open, Operation(
                    "Open an HTTP session", _SESSION_OPENED, status=201, errors=opening,
                    links=_SESSION_LINKS)),
                "GET": (self.sessions_stats, Operation("Session counts", _SESSION_STATS)),
            }),
            ("/sessions/{sid}", "session_close", {"DELETE": (self.session_close, Operation(
                "Close a session", _SESSION_CLOSED, errors=(SessionNotFound,)))}),
            ("/sessions/{sid}/reset", "session_reset", {"POST": (self.session_reset, Operation(
                "Reset a session", extended, body=reset, errors=(*body, *held), also=_NO_TASK_400))}),
            ("/sessions/{sid}/step", "session_step", {"POST": (self.session_step, Operation(
                f"Step ({act}) a session", extended, body=step, errors=(*body, *held, ResetRequired)))}),
            ("/sessions/{sid}/state", "session_state", {"GET": (self.session_state, Operation(
                "State of a session", state, errors=(*held, ResetRequired)))}),
        ]
        return [ApiRoute(path, handlers, name) for path, name, handlers in table]

    def openapi_schemas(self) -> dict[str, dict[str, Any]]:
        """Component schemas the routes' responses refer to by name."""
        env = self.env_class
        return {
            **reply_schema(env.observation_model, _REPLY_EXCLUDE),
            **reply_schema(env.state_model, set(), suffix=""),
            "StatelessObservation": self.stateless_observation,
            "SessionObservation": self.session_observation,
        }

    # --- helpers ------------------------------------------------------------------

    async def _parse(self, request: Request, adapter: TypeAdapter[Any]) -> Any:
        body = await request.body()
        # Values counted (in C, no parse) before validation, as a WebSocket frame's: a
        # body of a few MiB of small values would hold the event loop for seconds.
        if len(body) > SCAN_FROM and too_many_json_values(body):
            raise _too_many_values()
        try:
            return adapter.validate_json(body or b"{}")
        except ValidationError as exc:
            raise body_error(exc) from None

    async def _throwaway(self) -> Session:
        return await self.manager.open(owner=None)

    # --- upstream routes ----------------------------------------------------------

    async def health(self, request: Request) -> Response:
        extra = self.env_class.health()
        return json_response({**extra, "status": "healthy"} if extra else _HEALTHY)

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
                **self._reset_options_schema(),
            }
        )

    def _reset_options_schema(self) -> dict[str, Any]:
        model = self.env_class.reset_options_model
        return {"reset_options": model.model_json_schema()} if model is not None else {}

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
            obs = await session.step(body.action, body.timeout_s)
        finally:
            await session.close("stateless request")
        return _echo_id(json_response(_upstream_shape(obs)), body.request_id)

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
        try:
            obs = await session.reset(data)
        except TaskNotFound as err:  # on a session's path, 404 says the session is not there
            return wire_error_response(err, 400)
        return json_response(observation_data(obs, binary=False, extended=True))

    async def session_step(self, request: Request) -> Response:
        session = self.manager.get(request.path_params["sid"])
        body = await self._parse(request, self._step_adapter)
        obs = await session.step(body.action, body.timeout_s)
        return _echo_id(json_response(observation_data(obs, binary=False, extended=True)), body.request_id)

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


async def handle_http_error(request: Request, exc: Exception) -> Response:
    """Routing errors (404, 405 with its ``Allow`` header) in the error body's shape."""
    assert isinstance(exc, HTTPException)
    code = HTTP_ONLY_CODES.get(exc.status_code, "HTTP_ERROR")
    body = {"detail": exc.detail, "error": {"code": code, "message": exc.detail}}
    response = json_response(body, exc.status_code)
    response.headers.update(exc.headers or {})
    return response
