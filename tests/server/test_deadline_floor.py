"""A call's deadline (``timeout_s``) is at least 1 ms, in the models: below it the
request is refused as ``VALIDATION_ERROR`` (HTTP 422, a WS error frame), never run
into a ``504``. The schemathesis fuzzer sent ``5e-324`` s; the terminal env's action
timeouts have the same floor."""

from __future__ import annotations

import httpx
import pytest
from pydantic import ValidationError

from openenv._exceptions import ValidationFailed
from openenv._protocol import decode_request, request_adapter

echo_env = pytest.importorskip("echo_env", reason="envs/echo_env is installed by scripts/test.sh")

TINY = (5e-324, 1e-9, 0.0009, 0.0)


@pytest.mark.parametrize("timeout_s", TINY)
def test_http_step_below_the_floor_is_422(serve, timeout_s):
    server = serve(echo_env.EchoEnv)
    answer = httpx.post(f"{server.url}/step", json={"action": {"message": "x"}, "timeout_s": timeout_s},
                        timeout=30)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["code"] == "VALIDATION_ERROR"
    assert "timeout_s" in answer.text


def test_http_step_at_the_floor_is_taken(serve):
    server = serve(echo_env.EchoEnv)
    answer = httpx.post(f"{server.url}/step", json={"action": {"message": "x"}, "timeout_s": 1.0}, timeout=30)
    assert answer.status_code == 200, answer.text


def test_the_openapi_document_states_the_floor(serve):
    server = serve(echo_env.EchoEnv)
    doc = httpx.get(f"{server.url}/openapi.json", timeout=30).text
    assert '"minimum":0.001' in doc.replace(" ", "")


@pytest.mark.parametrize("timeout_s", TINY)
def test_ws_frame_below_the_floor_is_a_validation_error(timeout_s):
    adapter = request_adapter(echo_env.EchoAction)
    frame = '{"type": "step", "data": {"message": "x"}, "timeout_s": TIMEOUT}'
    with pytest.raises(ValidationFailed):
        decode_request(adapter, frame.replace("TIMEOUT", repr(timeout_s)), binary=False)
    ok = decode_request(adapter, frame.replace("TIMEOUT", "0.001"), binary=False)
    assert ok.timeout_s == 0.001


def test_terminal_action_timeouts_have_the_floor():
    terminal = pytest.importorskip("terminal_env", reason="envs/terminal_env is installed by scripts/test.sh")
    from pydantic import TypeAdapter

    adapter = TypeAdapter(terminal.MODELS.action)
    with pytest.raises(ValidationError):
        adapter.validate_python({"command": "true", "timeout_s": 5e-324})
    assert adapter.validate_python({"command": "true", "timeout_s": 0.001}) is not None
