"""The upstream baseline: the same echo env written on upstream OpenEnv 0.10.0's public
API, served by upstream's own ``create_app`` (FastAPI) under uvicorn. Runs under
``.venv-upstream/bin/python`` (``scripts/test.sh`` creates it); it imports nothing of
ours (upstream's package is also called ``openenv``, so run it with a cwd outside the
repository, as ``bench/_util.py`` does).

    .venv-upstream/bin/python bench/baselines/upstream_echo.py --port 8124
        [--stack default|tuned] [--max-envs N] [--max-seconds S]

``--stack default`` is what ``uvicorn.run(app, host, port)`` gives after a plain
install (asyncio loop, h11, access log on, level info); ``tuned`` is uvloop, httptools,
no access log. The module also defines ``EchoAction`` and ``EchoClient`` (upstream's
client base) for ``bench/_upstream_client.py``.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from typing import Any
from uuid import uuid4

from pydantic import Field

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class EchoAction(Action):
    message: str = Field(..., description="the message to echo")


class EchoObservation(Observation):
    echoed_message: str = ""
    message_length: int = 0
    step_count: int = 0


class EchoEnvironment(Environment):
    """Echoes each message; reward 0.1 per character (as our echo env)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> EchoObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return EchoObservation(echoed_message="ready", message_length=0, step_count=0, done=False, reward=0.0)

    def step(self, action: EchoAction, timeout_s: float | None = None, **kw: Any) -> EchoObservation:  # type: ignore[override]
        self._state.step_count += 1
        text = action.message
        return EchoObservation(
            echoed_message=text, message_length=len(text), step_count=self._state.step_count,
            done=False, reward=len(text) * 0.1,
        )

    @property
    def state(self) -> State:
        return self._state


class EchoClient(EnvClient[EchoAction, EchoObservation, State]):
    """Upstream's WebSocket client for the echo env."""

    def _step_payload(self, action: EchoAction) -> dict[str, Any]:
        return {"message": action.message}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[EchoObservation]:
        obs = payload.get("observation", {})
        reward, done = payload.get("reward"), payload.get("done", False)
        observation = EchoObservation(
            echoed_message=obs.get("echoed_message", ""), message_length=obs.get("message_length", 0),
            step_count=obs.get("step_count", 0), done=done, reward=reward,
        )
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stack", choices=["default", "tuned"], default="default")
    parser.add_argument("--max-envs", type=int, default=None, help="concurrent sessions (upstream default 1)")
    parser.add_argument("--max-seconds", type=float, default=1800)
    args = parser.parse_args()

    def watchdog() -> None:
        time.sleep(args.max_seconds)
        os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    import uvicorn

    from openenv.core.env_server.http_server import create_app

    app = create_app(EchoEnvironment, EchoAction, EchoObservation, env_name="echo",
                     max_concurrent_envs=args.max_envs)
    if args.stack == "default":
        stack: dict[str, Any] = {"loop": "asyncio", "http": "h11", "access_log": True, "log_level": "info"}
    else:
        stack = {"loop": "uvloop", "http": "httptools", "access_log": False, "log_level": "warning"}
    uvicorn.run(app, host="127.0.0.1", port=args.port, ws="websockets-sansio", **stack)


if __name__ == "__main__":
    main()
