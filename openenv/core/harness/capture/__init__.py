"""``openenv.core.harness.capture``: upstream's names for our capture proxy (``openenv.capture``).

``CaptureServer`` takes upstream's arguments; ``max_output_tokens``, ``auth_header``,
``provider`` and ``max_model_calls`` are accepted at upstream's defaults only (another
value raises a ``ValueError`` naming it). ``capture_level`` left out means probe the
backend (upstream's default names ``"tokens"``).
"""

from __future__ import annotations

from ...._lazy import lazy_exports as _lazy_exports
from ...._options import upstream_defaults_only as _defaults_only
from ....capture import (
    APIType,
    InferenceClient,
    RolloutGraph,
    TurnNode,
    UpstreamError,
    detect,
    to_trace_entries,
    to_training_trace,
    to_turn_records,
)
from ....capture import CaptureServer as _CaptureServer

__all__ = [
    "APIType",
    "CaptureServer",
    "InferenceClient",
    "RolloutGraph",
    "TurnNode",
    "UpstreamError",
    "detect",
    "to_trace_entries",
    "to_training_trace",
    "to_turn_records",
]


class CaptureServer(_CaptureServer):
    """Our ``CaptureServer`` with upstream's constructor."""

    def __init__(
        self,
        *,
        llm_url: str,
        model: str,
        port: int = 8100,
        max_output_tokens: int = 8192,
        api_key: str | None = None,
        auth_header: str = "Authorization",
        capture_level: str | None = None,
        provider: str = "openai",
        admin_key: str | None = None,
        max_model_calls: int = 0,
    ) -> None:
        super().__init__(
            llm_url=llm_url,
            model=model,
            port=port,
            api_key=api_key,
            capture_level=capture_level,
            admin_key=admin_key,
            **_defaults_only(
                "CaptureServer",
                max_output_tokens=(max_output_tokens, 8192),
                auth_header=(auth_header, "Authorization"),
                provider=(provider, "openai"),
                max_model_calls=(max_model_calls, 0),
            ),
        )


__getattr__ = _lazy_exports(
    __name__,
    {},
    missing={
        name: "token-drift and LLM validation tools are not part of our capture proxy"
        for name in ("measure_retokenization_skew", "LLMReport", "validate_llm", "require_llm")
    },
)[0]
