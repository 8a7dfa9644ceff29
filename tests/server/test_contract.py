"""The HTTP and WebSocket contract: bodies are validated as their schemas say (strict
JSON types), a body the schema requires is documented as required, and ``POST /sessions``
links its ``session_id`` to the session routes."""

from __future__ import annotations

import httpx
import pytest

from .._wire import call, connect, expect_error


@pytest.fixture
def http(server):
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def _sid(http: httpx.Client) -> str:
    return str(http.post("/sessions").json()["session_id"])


@pytest.mark.parametrize("seed", [False, True, 1.5, "1"], ids=["false", "true", "fraction", "string"])
@pytest.mark.parametrize("route", ["/reset", "session"])
def test_a_seed_that_is_not_a_json_integer_is_refused(http, route, seed):
    path = f"/sessions/{_sid(http)}/reset" if route == "session" else route
    r = http.post(path, json={"seed": seed})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "VALIDATION_ERROR"
    assert r.json()["detail"][0]["loc"] == ["body", "seed"]
    assert http.post(path, json={"seed": 1}).status_code == 200
    assert http.post(path, json={"seed": 1.0}).status_code == 200  # an integer, to JSON Schema


@pytest.mark.parametrize("extended", [False, True], ids=["upstream", "openenv.v1"])
def test_a_bool_seed_is_refused_on_the_websocket(server, extended):
    with connect(server.ws_url, extended=extended) as ws:
        expect_error(call(ws, {"type": "reset", "data": {"seed": False}}), "VALIDATION_ERROR")
        assert call(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


@pytest.mark.parametrize("field", ["id", "timeout_s"])
def test_websocket_request_fields_are_strict(server, field):
    with connect(server.ws_url, extended=True) as ws:
        expect_error(call(ws, {"type": "reset", field: True, "data": {}}), "VALIDATION_ERROR")
        assert call(ws, {"type": "reset", field: 7, "data": {}})["type"] == "observation"


@pytest.mark.parametrize("field", ["timeout_s", "request_id"])
def test_step_options_are_strict_too(http, field):
    r = http.post("/step", json={"action": {"message": "x"}, field: True})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", field]


def test_a_step_without_a_body_is_422_and_documented_as_required(http):
    doc = http.get("/openapi.json").json()
    for path in ("/step", "/sessions/{sid}/step"):
        assert doc["paths"][path]["post"]["requestBody"]["required"] is True  # the action is
        assert "422" in doc["paths"][path]["post"]["responses"]
    for path in ("/reset", "/sessions/{sid}/reset"):
        assert doc["paths"][path]["post"]["requestBody"]["required"] is False  # every field optional
    sid = _sid(http)
    http.post(f"/sessions/{sid}/reset")
    for path in ("/step", f"/sessions/{sid}/step"):
        r = http.post(path)
        assert r.status_code == 422
        assert r.json()["detail"][0]["loc"] == ["body", "action"]


def test_opening_a_session_links_to_every_session_route(http):
    doc = http.get("/openapi.json").json()
    operations = {
        op["operationId"]: (path, method)
        for path, item in doc["paths"].items() for method, op in item.items()
    }
    assert len(operations) == sum(len(item) for item in doc["paths"].values())  # ids are unique
    links = doc["paths"]["/sessions"]["post"]["responses"]["201"]["links"]
    targets = {operations[link["operationId"]] for link in links.values()}
    assert targets == {
        ("/sessions/{sid}/reset", "post"), ("/sessions/{sid}/step", "post"),
        ("/sessions/{sid}/state", "get"), ("/sessions/{sid}", "delete"),
    }
    assert {str(link["parameters"]) for link in links.values()} == {"{'sid': '$response.body#/session_id'}"}
