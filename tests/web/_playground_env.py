"""A test env for the playground: a tagged-union action, an image, a reward breakdown."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from openenv import Action, Environment, Execution, Observation, State


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG, made by hand (no imaging library)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


class Move(BaseModel):
    kind: Literal["move"] = "move"
    dx: int = Field(default=0, ge=-3, le=3, description="steps right (negative: left)")


class Paint(BaseModel):
    kind: Literal["paint"] = "paint"
    color: Literal["red", "green", "blue"] = "red"
    label: str = Field(default="", max_length=40)
    size: int = Field(ge=1, le=5, description="brush size (required: the form starts at the minimum)")


class CanvasOptions(BaseModel):
    """Reset options: where the brush starts."""

    model_config = {"extra": "forbid"}

    start_x: int = Field(default=0, ge=0, le=100)
    note: str | None = None


class CanvasAction(Action):
    cmd: Annotated[Move | Paint, Field(discriminator="kind")]


class CanvasObservation(Observation):
    x: int = 0
    color: str = "red"
    label: str = ""
    image: str = Field(default="", description="the canvas, PNG in base64")


COLORS = {"red": (220, 40, 40), "green": (40, 180, 60), "blue": (40, 80, 220)}


class CanvasEnv(Environment[CanvasAction, CanvasObservation, State]):
    """Move a brush and paint: the playground's test env."""

    execution = Execution.INLINE
    reset_options_model = CanvasOptions

    def __init__(self) -> None:
        self._state, self._x, self._color, self._label = State(), 0, "red", ""

    def _observe(self, reward: float, parts: dict[str, float]) -> CanvasObservation:
        image = base64.b64encode(png(24, 16, COLORS[self._color])).decode()
        return CanvasObservation(x=self._x, color=self._color, label=self._label, image=image,
                                 reward=reward, metadata={"reward_breakdown": parts})

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,
              options: Any = None) -> CanvasObservation:
        start = options.start_x if isinstance(options, CanvasOptions) else 0
        self._state, self._x, self._color, self._label = State(episode_id=episode_id), start, "red", ""
        return self._observe(0.0, {})

    def step(self, action: CanvasAction) -> CanvasObservation:
        self._state.step_count += 1
        cmd = action.cmd
        if isinstance(cmd, Move):
            self._x += cmd.dx
            return self._observe(0.1 * abs(cmd.dx), {"movement": 0.1 * abs(cmd.dx), "paint": 0.0})
        self._color, self._label = cmd.color, cmd.label
        return self._observe(1.0, {"movement": 0.0, "paint": 1.0})

    def state(self) -> State:
        return self._state.model_copy()
