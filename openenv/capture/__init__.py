"""Token-exact capture of the model calls an agent makes (``openenv capture serve``).

A proxy between an agent and an OpenAI-compatible backend. The agent speaks OpenAI chat
completions, OpenAI Responses, Anthropic Messages or Google generateContent; each call
goes to the backend as chat completions asking for token ids and logprobs (vLLM's
``return_token_ids``), and comes back in the agent's dialect, streamed as server-sent
events when asked. Each rollout is a session whose id is the agent's API key; its calls
form a graph linked by exact token prefix, exported as upstream OpenEnv's
``TrainingTrace`` (schema 1) or the ``/sessions/{id}/rollout`` document.

Names follow upstream's ``openenv.core.harness.capture``.
"""

from __future__ import annotations

from ._app import create_app
from ._backend import InferenceClient
from ._detection import APIType, detect
from ._errors import BadRequest, CaptureError, NotTrainable, UnknownDialect, UpstreamError
from ._graph import RolloutGraph, TrainingSequence, TurnNode
from ._server import CaptureServer
from ._sessions import Session, SessionRegistry
from ._trace import (
    TrainingTrace,
    TrainingTurn,
    export_session,
    to_trace_entries,
    to_training_trace,
    to_turn_records,
)

__all__ = [
    "APIType",
    "BadRequest",
    "CaptureError",
    "CaptureServer",
    "InferenceClient",
    "NotTrainable",
    "RolloutGraph",
    "Session",
    "SessionRegistry",
    "TrainingSequence",
    "TrainingTrace",
    "TrainingTurn",
    "TurnNode",
    "UnknownDialect",
    "UpstreamError",
    "create_app",
    "detect",
    "export_session",
    "to_trace_entries",
    "to_training_trace",
    "to_turn_records",
]
