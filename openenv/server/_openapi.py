"""``/openapi.json``, built once from the env's models (no FastAPI import at start-up).

``info.version`` is ``1.0.0``: upstream's ``openenv validate --url`` reads it as the
standard version.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from .._env import EnvClass
from .._models import EnvironmentMetadata
from .._protocol import ObservationData, ResetData

_REF = "#/components/schemas/{model}"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF.format(model=name)}


def _op(
    summary: str, response: str | None, body: str | None = None, status: str = "200", session: bool = False
) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {status: {"description": "OK"}}}
    if response:
        op["responses"][status]["content"] = {"application/json": {"schema": _ref(response)}}
    if body:
        op["requestBody"] = {"content": {"application/json": {"schema": _ref(body)}}}
    if session:
        op["parameters"] = [{"name": "sid", "in": "path", "required": True, "schema": {"type": "string"}}]
    return op


def build_openapi(env_class: EnvClass, step_model: type[BaseModel]) -> dict[str, Any]:
    models: list[type[BaseModel]] = [
        env_class.action_model,
        env_class.observation_model,
        env_class.state_model,
        EnvironmentMetadata,
        ResetData,
        ObservationData,
        step_model,
    ]
    _, defs = models_json_schema([(m, "validation") for m in models], ref_template=_REF)
    act, obs, state = (m.__name__ for m in models[:3])
    step = step_model.__name__
    paths = {
        "/health": {"get": _op("Liveness", None)},
        "/metadata": {"get": _op("Environment metadata", "EnvironmentMetadata")},
        "/schema": {"get": _op("JSON Schemas of action, observation and state", None)},
        "/reset": {"post": _op("Stateless reset (throwaway env)", "ObservationData", "ResetData")},
        "/step": {"post": _op("Stateless step (throwaway env)", "ObservationData", step)},
        "/state": {"get": _op("State of a throwaway env", state)},
        "/mcp": {"post": _op("JSON-RPC 2.0 (MCP)", None)},
        "/sessions": {
            "post": _op("Open an HTTP session", None, status="201"),
            "get": _op("Session counts", None),
        },
        "/sessions/{sid}": {"delete": _op("Close a session", None, session=True)},
        "/sessions/{sid}/reset": {
            "post": _op("Reset a session", "ObservationData", "ResetData", session=True)
        },
        "/sessions/{sid}/step": {"post": _op("Step a session", "ObservationData", step, session=True)},
        "/sessions/{sid}/state": {"get": _op("State of a session", state, session=True)},
    }
    meta = env_class.metadata()
    return {
        "openapi": "3.1.0",
        "info": {"title": meta.name, "description": meta.description, "version": "1.0.0"},
        "paths": paths,
        "components": {"schemas": defs.get("$defs", {})},
        "x-openenv": {"action": act, "observation": obs, "websocket": "/ws"},
    }
