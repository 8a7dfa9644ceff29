"""``openenv.core.harness.capture`` / ``.training``: upstream's names over ``openenv.capture``."""

from __future__ import annotations

import httpx
import pytest

import openenv.capture as ours
from openenv.core.harness import capture, training

NAMES = (
    "to_turn_records",
    "to_trace_entries",
    "to_training_trace",
    "APIType",
    "detect",
    "RolloutGraph",
    "TurnNode",
    "InferenceClient",
    "UpstreamError",
)


@pytest.mark.parametrize("name", NAMES)
def test_upstream_names_are_ours(name: str) -> None:
    assert getattr(capture, name) is getattr(ours, name)


def test_training_names_are_ours() -> None:
    assert training.TrainingTrace is ours.TrainingTrace
    assert training.TrainingTurn is ours.TrainingTurn


def test_capture_server_takes_upstreams_arguments_and_serves() -> None:
    server = capture.CaptureServer(
        llm_url="http://127.0.0.1:9/v1",
        model="m",
        port=0,
        max_output_tokens=8192,
        auth_header="Authorization",
        provider="openai",
        max_model_calls=0,
        admin_key="k",
    )
    assert isinstance(server, ours.CaptureServer)
    with server:
        reply = httpx.get(f"{server.url}/health", timeout=10)
    assert reply.status_code == 200


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_output_tokens", 100),
        ("auth_header", "x-api-key"),
        ("provider", "anthropic"),
        ("max_model_calls", 3),
    ],
)
def test_an_option_ours_lacks_is_refused_by_name(option: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"CaptureServer\({option}="):
        capture.CaptureServer(llm_url="http://127.0.0.1:9/v1", model="m", **{option: value})  # type: ignore[arg-type]


def test_upstreams_validation_tools_are_named_as_missing() -> None:
    with pytest.raises(AttributeError, match="validate_llm is upstream OpenEnv's, not provided here"):
        _ = capture.validate_llm
