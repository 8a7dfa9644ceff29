"""HTTP request bodies are value-counted before validation, as WebSocket frames are
(issue 34): a body of hundreds of thousands of small values is refused with the
WebSocket's typed error (``VALIDATION_ERROR``, ``max_values``) on every route that
takes one, and the server goes on answering."""

from __future__ import annotations

import threading

import httpx
import orjson
import pytest

from openenv._protocol import MAX_VALUES

from .._wire import call, connect, expect_error

#: 300,000 keys: about 3.5 MB, far under the body limit, ten times ``MAX_VALUES``.
DENSE_METADATA = {f"k{i}": 0 for i in range(300_000)}
JSON = {"content-type": "application/json"}


def _dense(route: str) -> bytes:
    if route.endswith("reset"):
        return orjson.dumps({"seed": 1, "options": DENSE_METADATA})
    return orjson.dumps({"action": {"message": "", "metadata": DENSE_METADATA}})


@pytest.mark.parametrize("route", ["/reset", "/step", "/sessions/{sid}/reset", "/sessions/{sid}/step"])
def test_a_dense_body_is_refused_like_a_dense_frame(server, route: str) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        sid = http.post("/sessions").json()["session_id"]
        http.post(f"/sessions/{sid}/reset", json={})
        reply = http.post(route.format(sid=sid), content=_dense(route), headers=JSON)
        assert reply.status_code == 422, reply.text[:300]
        error = reply.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert f"more than {MAX_VALUES} values" in error["message"]
        assert error["max_values"] == MAX_VALUES
        # The same refusal as a WebSocket frame of the same values.
        with connect(server.ws_url, extended=True) as ws:
            call(ws, {"type": "reset", "id": 1})
            dense = {"type": "step", "id": 2, "data": {"message": "", "metadata": DENSE_METADATA}}
            ws_error = expect_error(call(ws, dense), "VALIDATION_ERROR")
            assert ws_error == error
        # The session and the server go on.
        step = http.post(f"/sessions/{sid}/step", json={"action": {"message": "after"}})
        assert step.status_code == 200, step.text[:300]
        assert http.get("/health").status_code == 200


def test_dense_bodies_from_one_client_leave_another_served(server) -> None:
    """Eight dense bodies in a row on one thread; another client's steps all answered
    meanwhile (how fast is bench's business: here, only that they are answered)."""
    body = _dense("/step")
    refused: list[int] = []

    def flood() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            for _ in range(8):
                refused.append(http.post("/step", content=body, headers=JSON).status_code)

    flooder = threading.Thread(target=flood, daemon=True)
    flooder.start()
    answered = 0
    with httpx.Client(base_url=server.url, timeout=30) as http:
        sid = http.post("/sessions").json()["session_id"]
        http.post(f"/sessions/{sid}/reset", json={})
        while flooder.is_alive() and answered < 500:
            assert http.post(f"/sessions/{sid}/step", json={"action": {"message": "x"}}).status_code == 200
            answered += 1
    flooder.join(60)
    assert refused == [422] * 8
    assert answered > 0
