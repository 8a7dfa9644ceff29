"""Deliberately broken servers for ``openenv validate``: each breaks one rule.

Env-level breaks are env classes served by our real server (the ``serve`` fixture);
protocol-level breaks need a server of their own: ``RawServer`` is a hand-written
Starlette app speaking the ``/ws`` protocol with one chosen fault.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
import uuid
from typing import Any, ClassVar

import uvicorn
from pydantic import Field, model_validator
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from openenv import Action, Environment, Execution, Observation, State


class CountAction(Action):
    n: int = Field(default=1, ge=0, le=10)


class CountObservation(Observation):
    total: int = 0


class CountEnv(Environment[CountAction, CountObservation, State]):
    """Adds n to a total; a well-behaved env the broken ones derive from."""

    execution = Execution.INLINE

    def __init__(self) -> None:
        self._state = State()
        self._total = 0

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,
              options: Any = None) -> CountObservation:
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        self._total = 0
        return CountObservation(total=0, reward=0.0)

    def step(self, action: CountAction) -> CountObservation:
        self._state.step_count += 1
        self._total += action.n
        return CountObservation(total=self._total, reward=float(action.n))

    def state(self) -> State:
        return self._state.model_copy()


class LyingObservation(Observation):
    # The published schema says string; the env sends an integer.
    total: int = Field(default=0, json_schema_extra={"type": "string"})


class SchemaLiarEnv(Environment[CountAction, LyingObservation, State]):
    """Observations that do not match the schema it publishes."""

    execution = Execution.INLINE

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,
              options: Any = None) -> LyingObservation:
        return LyingObservation(total=0)

    def step(self, action: CountAction) -> LyingObservation:
        return LyingObservation(total=action.n)

    def state(self) -> State:
        return State()


class SharedStateEnv(CountEnv):
    """Every session shares one State object: stepping one moves the others."""

    shared: ClassVar[State] = State(episode_id="shared")

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,
              options: Any = None) -> CountObservation:
        SharedStateEnv.shared.step_count = 0
        return CountObservation(total=0, reward=0.0)

    def step(self, action: CountAction) -> CountObservation:
        SharedStateEnv.shared.step_count += 1
        return CountObservation(total=SharedStateEnv.shared.step_count, reward=1.0)

    def state(self) -> State:
        return SharedStateEnv.shared.model_copy()


class NoisyEnv(CountEnv):
    """Ignores the seed: rewards are random."""

    def step(self, action: CountAction) -> CountObservation:
        obs = super().step(action)
        obs.reward = random.random()
        return obs


class PickyAction(Action):
    """``n`` looks optional in the schema, but the validator wants it."""

    n: int | None = None

    @model_validator(mode="after")
    def _needs_n(self) -> PickyAction:
        if self.n is None:
            raise ValueError("n is needed")
        return self


class PickyEnv(Environment[PickyAction, CountObservation, State]):
    """Refuses the schema's minimal action ``{}``; takes one with ``n``."""

    execution = Execution.INLINE

    def __init__(self) -> None:
        self._state = State()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,
              options: Any = None) -> CountObservation:
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        return CountObservation()

    def step(self, action: PickyAction) -> CountObservation:
        self._state.step_count += 1
        return CountObservation(total=action.n or 0, reward=0.0)

    def state(self) -> State:
        return self._state.model_copy()


class RefusingAction(Action):
    """Valid by its schema, refused by its validator, whatever the fields."""

    n: int | None = None

    @model_validator(mode="after")
    def _never(self) -> RefusingAction:
        raise ValueError("nothing is ever good enough")


class RefusingEnv(PickyEnv):
    action_model = RefusingAction


SCHEMA = {
    "action": CountAction.model_json_schema(),
    "observation": CountObservation.model_json_schema(),
    "state": State.model_json_schema(),
}


class RawServer:
    """A hand-written protocol server with one fault:

    * ``"drop_bad_frames"``: a frame that is not valid JSON closes the socket, no error;
    * ``"ignore_close"``: ``close`` is ignored, the socket stays open;
    * ``"unhealthy"``: ``/health`` answers 503.
    """

    def __init__(self, fault: str) -> None:
        self.fault = fault
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        app = Starlette(routes=[
            Route("/health", self.health), Route("/metadata", self.metadata),
            Route("/schema", self.schema), WebSocketRoute("/ws", self.ws),
            Route("/reset", self.http_obs, methods=["POST"]), Route("/step", self.http_obs, methods=["POST"]),
        ])
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True, name=f"raw-{fault}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def health(self, request: Request) -> Response:
        if self.fault == "unhealthy":
            return JSONResponse({"status": "starting"}, 503)
        return JSONResponse({"status": "healthy"})

    async def metadata(self, request: Request) -> Response:
        return JSONResponse({"name": "raw", "description": f"raw server ({self.fault})"})

    async def schema(self, request: Request) -> Response:
        return JSONResponse(SCHEMA)

    async def http_obs(self, request: Request) -> Response:
        return JSONResponse({"observation": {"total": 0, "metadata": {}}, "reward": 0.0, "done": False})

    async def ws(self, ws: WebSocket) -> None:
        await ws.accept()
        total, steps = 0, 0
        try:
            while True:
                text = await ws.receive_text()
                try:
                    msg = json.loads(text)
                except ValueError:
                    if self.fault == "drop_bad_frames":
                        await ws.close()
                        return
                    await ws.send_json({"type": "error", "data": {"message": "bad", "code": "INVALID_JSON"}})
                    continue
                kind = msg.get("type")
                if kind == "reset":
                    total, steps = 0, 0
                    obs = {"observation": {"total": 0, "metadata": {}}, "reward": 0.0, "done": False}
                    await ws.send_json({"type": "observation", "data": obs})
                elif kind == "step":
                    data = msg.get("data") or {}
                    if set(data) - {"n", "metadata"}:
                        err = {"message": "bad action", "code": "VALIDATION_ERROR"}
                        await ws.send_json({"type": "error", "data": err})
                        continue
                    total += int(data.get("n", 1))
                    steps += 1
                    obs = {"observation": {"total": total, "metadata": {}}, "reward": 1.0, "done": False}
                    await ws.send_json({"type": "observation", "data": obs})
                elif kind == "state":
                    state = {"episode_id": str(id(ws)), "step_count": steps}
                    await ws.send_json({"type": "state", "data": state})
                elif kind == "close":
                    if self.fault != "ignore_close":
                        await ws.close()
                        return
                else:
                    err = {"message": f"Unknown message type: {kind}", "code": "UNKNOWN_TYPE"}
                    await ws.send_json({"type": "error", "data": err})
        except WebSocketDisconnect:
            return

    def start(self) -> RawServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "raw server did not start"
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
