"""The browser env's settings: constructor keywords (``openenv serve --env-kwargs``)."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


def _default_chromium() -> str:
    return os.environ.get("OPENENV_BROWSER_CHROMIUM", "/usr/bin/chromium")


class BrowserConfig(BaseModel):
    """How the env runs Chromium. Every field is a constructor keyword of ``BrowserEnv``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chromium_path: str = Field(
        default_factory=_default_chromium,
        description="the Chromium binary (default $OPENENV_BROWSER_CHROMIUM or /usr/bin/chromium)",
    )
    headless: bool = True
    viewport_width: int = Field(default=800, ge=100, le=4096)
    viewport_height: int = Field(default=600, ge=100, le=4096)
    allowed_origins: tuple[str, ...] = Field(
        default=(), description="origins besides the task server that goto and links may reach"
    )
    action_timeout_s: float = Field(default=5.0, gt=0, le=300, description="Playwright's wait for one action")
    load_timeout_s: float = Field(default=30.0, gt=0, le=600, description="the wait for a page to load")
    hang_timeout_s: float = Field(
        default=10.0, gt=0, le=600, description="a page silent this long is hung: its session ends"
    )
    chromium_args: tuple[str, ...] = Field(default=(), description="extra Chromium switches")
    max_wait_ms: int = Field(
        default=10_000, ge=0, le=10_000, description="the longest a noop waits (wait_ms is capped at this)"
    )

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> BrowserConfig:
        """Validate constructor keywords; a TypeError names what is wrong."""
        try:
            return cls(**kwargs)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise TypeError(f"BrowserEnv: bad keyword arguments: {problems}") from None
