"""When a training run cannot go on: its env is unreachable, or a step scored nothing.

A run that trains on nothing must not look like one that trained: ``train()`` checks
every env URL before the first step (``check_envs``) and stops after a step in which
no episode succeeded (``check_step``), each with a ``TrainingFailed`` whose message is
one line saying what failed and what to do.
"""

from __future__ import annotations

import urllib.error
from collections.abc import Mapping
from typing import Any

from .._exceptions import OpenEnvError
from ._config import TrainConfig
from ._text import fetch_schema, text_env

#: How a user starts the shipped training env; quoted in the errors below.
SERVE_HINT = "`openenv serve envs/arith_env --port 8000`"


class TrainingFailed(OpenEnvError):
    """The run stopped: an env cannot be reached, or a step scored no episode."""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"GET /schema answered HTTP {exc.code}: not an openenv server?"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return one_line(f"{type(exc).__name__}: {exc}")


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def check_envs(cfg: TrainConfig) -> None:
    """Every env URL answers ``/schema`` and is a text env (or has adapters).

    Raises ``TrainingFailed`` for a URL that cannot be reached, ``NotATextEnv`` for an
    env the trainer cannot drive.
    """
    for url in dict.fromkeys(cfg.env):
        try:
            schema = fetch_schema(url, cfg.env_timeout_s)
        except (OSError, ValueError) as exc:  # URLError and timeouts are OSErrors; bad JSON
            raise TrainingFailed(
                f"cannot reach the env at {url} ({_reason(exc)}); start its server first "
                f"(e.g. {SERVE_HINT}) or pass the right --env URL"
            ) from None
        text_env(schema, observation_adapter=cfg.observation_adapter, action_adapter=cfg.action_adapter)


def check_step(cfg: TrainConfig, row: Mapping[str, Any]) -> None:
    """Raise ``TrainingFailed`` when no episode of the step's metrics ``row`` succeeded."""
    if row["episodes"] > 0:
        return
    errors = row.get("errors") or ["no error recorded"]
    raise TrainingFailed(
        f"step {row['step']}: no episode succeeded ({row['failed']} failed; first error: "
        f"{one_line(str(errors[0]), 200)}); check that the env server at {', '.join(cfg.env)} "
        f"is up (`openenv validate URL`), then rerun with --resume; metrics in {cfg.out}/metrics.jsonl"
    )
