"""HTTP routes over a real socket: upstream's stateless routes, schemas, OpenAPI, MCP."""

from __future__ import annotations

import httpx
import pytest
from starlette.routing import Route

from openenv import Observation
from openenv._models import EnvironmentMetadata

from .._envs import TAction, TObservation, TState, make_env
from .._wire import connect

UPSTREAM_OBS_KEYS = {"observation", "reward", "done", "metadata"}


@pytest.fixture
def http(server):
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def test_health_body_is_exact(http):
    r = http.get("/health")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"status": "healthy"}
    assert r.content == b'{"status":"healthy"}'


def test_metadata_fields(serve):
    env = make_env(env_name="named_env", env_description="Does tests.", env_version="9.9")
    with httpx.Client(base_url=serve(env).url, timeout=10) as http:
        meta = http.get("/metadata").json()
    assert meta == {
        "name": "named_env", "description": "Does tests.", "readme_content": None,
        "version": "9.9", "author": None, "documentation_url": None,
    }
    EnvironmentMetadata.model_validate(meta)


def test_metadata_defaults_to_the_class_name(http):
    meta = http.get("/metadata").json()
    # make_env's classes have no docstring of their own (a parent's is not used)
    assert meta["name"] == "SyncThreadEnv"
    assert meta["description"] == "SyncThreadEnv"


def test_metadata_description_is_the_first_doc_line(serve):
    env = make_env(__doc__="  Guess a number.\n\n    Long text.  ")
    with httpx.Client(base_url=serve(env).url, timeout=10) as http:
        assert http.get("/metadata").json()["description"] == "Guess a number."


def test_schema_matches_the_env_models(http):
    schema = http.get("/schema").json()
    assert set(schema) == {"action", "observation", "state", "reset_observation"}
    assert schema["action"] == TAction.model_json_schema()
    assert schema["observation"] == TObservation.model_json_schema()
    assert schema["state"] == TState.model_json_schema()
    assert schema["reset_observation"] == TObservation.model_json_schema()
    assert {"message", "sleep_s", "fail"} <= set(schema["action"]["properties"])
    assert schema["action"]["additionalProperties"] is False


def test_openapi_documents_every_route_the_app_runs(server, http):
    doc = http.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    assert doc["info"]["version"] == "1.0.0"
    assert doc["info"]["title"] == "SyncThreadEnv"
    served = {
        (route.path, method.lower())
        for route in server.app.routes
        if isinstance(route, Route)
        for method in (route.methods or set()) - {"HEAD"}
    }
    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert documented == served
    assert {("/reset", "post"), ("/sessions", "get"), ("/sessions/{sid}/step", "post")} <= documented
    assert doc["x-openenv"]["action"] == "TAction"
    assert doc["x-openenv"]["websockets"] == ["/ws"]


def test_openapi_documents_error_statuses_with_the_error_body(http):
    doc = http.get("/openapi.json").json()
    step = doc["paths"]["/sessions/{sid}/step"]["post"]["responses"]
    assert set(step) >= {"200", "404", "409", "410", "422", "500", "504"}
    assert "SESSION_NOT_FOUND" in step["404"]["description"]
    assert {"SESSION_BUSY", "RESET_REQUIRED"} <= set(step["409"]["description"].split(": ")[1].split(", "))
    error_body = {"$ref": "#/components/schemas/ErrorBody"}
    for status in ("404", "422", "500"):
        assert step[status]["content"]["application/json"]["schema"] == error_body
    body = doc["components"]["schemas"]["ErrorBody"]
    assert body["required"] == ["detail", "error"]
    assert body["properties"]["error"]["required"] == ["code", "message"]
    assert doc["paths"]["/sessions"]["post"]["responses"]["201"]
    assert doc["paths"]["/sessions/{sid}/state"]["get"]["parameters"][0]["name"] == "sid"


def test_error_statuses_merge_the_codes_a_route_answers_with_another_status():
    from openenv._exceptions import SessionNotFound, TaskNotFound, ValidationFailed
    from openenv.server._openapi import error_statuses

    got = error_statuses([SessionNotFound, ValidationFailed], {422: ["TASK_NOT_FOUND", "VALIDATION_ERROR"]})
    assert got == {404: ["SESSION_NOT_FOUND"], 422: ["VALIDATION_ERROR", "TASK_NOT_FOUND"]}
    assert error_statuses([TaskNotFound]) == {404: ["TASK_NOT_FOUND"]}


def test_error_answers_match_their_documented_schema(http):
    doc = http.get("/openapi.json").json()
    error_body = doc["components"]["schemas"]["ErrorBody"]
    r = http.post("/sessions/nope/step", json={"action": {"message": "x"}})
    assert r.status_code == 404
    assert set(r.json()) == set(error_body["required"])
    assert r.json()["error"]["code"] == "SESSION_NOT_FOUND"
    assert r.json()["error"]["code"] in error_body["properties"]["error"]["properties"]["code"]["enum"]


@pytest.mark.parametrize(("path", "allow"), [
    ("/reset", {"POST"}), ("/sessions", {"GET", "HEAD", "POST"}), ("/health", {"GET", "HEAD"}),
    ("/sessions/abc", {"DELETE"}),
])
def test_options_and_wrong_methods_get_405_with_allow(http, path, allow):
    """No CORS: OPTIONS is a method like any other a path does not serve."""
    for method in ("OPTIONS", "PUT", "PATCH"):
        r = http.request(method, path)
        assert r.status_code == 405, (method, path)
        assert set(r.headers["allow"].split(", ")) == allow
        assert r.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


def test_unknown_path_is_404_with_the_error_body(http):
    r = http.get("/no/such/route")
    assert r.status_code == 404
    assert r.json() == {"detail": "Not Found", "error": {"code": "NOT_FOUND", "message": "Not Found"}}


def test_user_routes_are_served_and_documented(serve):
    """``create_app`` returns a Starlette app: users append routes (RFC 0001)."""
    from starlette.responses import JSONResponse
    from starlette.routing import Mount

    server = serve()

    async def hello(request):
        return JSONResponse({"hello": request.path_params["who"]})

    server.app.router.routes.append(Route("/hello/{who}", hello, methods=["GET"]))
    server.app.router.routes.append(Mount("/extra", routes=[Route("/ping", hello)]))
    with httpx.Client(base_url=server.url, timeout=10) as http:
        assert http.get("/hello/you").json() == {"hello": "you"}
        doc = http.get("/openapi.json").json()
    op = doc["paths"]["/hello/{who}"]["get"]
    assert op["parameters"] == [{"name": "who", "in": "path", "required": True, "schema": {"type": "string"}}]
    assert "default" in op["responses"]
    assert "/extra" in doc["x-openenv"]["mounts"]


def test_openapi_refs_resolve(http):
    doc = http.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert {"TAction", "TObservationReply", "TState", "EnvironmentMetadata", "ResetData",
            "StatelessObservation", "SessionObservation", "StepRequest", "ErrorBody"} <= set(schemas)
    refs: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "$ref" in node:
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc)
    assert refs
    for ref in refs:
        assert ref.startswith("#/components/schemas/")
        assert ref.rsplit("/", 1)[1] in schemas, ref


def test_openapi_is_stable_across_requests(http):
    assert http.get("/openapi.json").json() == http.get("/openapi.json").json()


# --- stateless upstream routes ----------------------------------------------------------------


def test_stateless_reset_has_upstreams_shape(server, http):
    r = http.post("/reset", json={"seed": 3, "episode_id": "e", "level": 1})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == UPSTREAM_OBS_KEYS
    assert body["metadata"] is None  # the key is always there, null when empty
    assert body["reward"] is None
    assert body["done"] is False
    obs = body["observation"]
    assert {"reward", "done", "truncated"}.isdisjoint(obs)
    assert (obs["seed"], obs["episode_id"], obs["options"]) == (3, "e", {"level": 1})
    assert server.tracker.close_counts() == [1]  # a throwaway env, closed
    assert server.active == 0


@pytest.mark.parametrize("body", [None, b"", b"{}"])
def test_stateless_reset_without_a_body(http, body):
    r = http.post("/reset", content=body)
    assert r.status_code == 200
    assert r.json()["observation"]["message"] == "ready"


def test_stateless_step_resets_a_throwaway_env_and_steps_it(server, http):
    r = http.post("/step", json={"action": {"message": "hi"}, "timeout_s": 5, "request_id": "r1"})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == UPSTREAM_OBS_KEYS
    assert (body["reward"], body["done"], body["metadata"]) == (1.0, False, None)
    assert body["observation"]["message"] == "hi"
    assert body["observation"]["step"] == 1
    assert server.tracker.count("reset") == 1
    assert server.tracker.close_counts() == [1]


def test_stateless_step_non_empty_metadata(http):
    body = http.post("/step", json={"action": {"message": "with-metadata"}}).json()
    assert body["metadata"] == {"echo": "with-metadata"}


def test_stateless_step_invalid_action_is_422(server, http):
    r = http.post("/step", json={"action": {"message": 5}})
    assert r.status_code == 422
    body = r.json()
    assert set(body) == {"detail", "error"}
    assert body["error"]["code"] == "VALIDATION_ERROR"
    assert isinstance(body["detail"], list)
    assert body["detail"][0]["loc"][-1] == "message"
    assert server.tracker.instances == []  # rejected before any env was built


def test_stateless_step_missing_action_is_422(http):
    r = http.post("/step", json={})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "VALIDATION_ERROR"


def test_malformed_json_body_is_422_invalid_json_as_upstream(http):
    r = http.post("/step", content=b"{bad")
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "INVALID_JSON"
    assert r.json()["detail"] == [{"type": "json_invalid", "loc": ["body", 0], "msg": "JSON decode error"}]
    assert http.get("/health").status_code == 200


def test_stateless_state(server, http):
    r = http.get("/state")
    assert r.status_code == 200
    body = r.json()
    assert (body["episode_id"], body["step_count"]) == (None, 0)
    TState.model_validate(body)
    assert server.tracker.close_counts() == [1]


def test_env_error_on_stateless_step_is_500_and_frees_the_slot(server, http):
    r = http.post("/step", json={"action": {"fail": "broken"}})
    assert r.status_code == 500
    body = r.json()
    assert body["error"]["code"] == "EXECUTION_ERROR"
    assert body["error"]["exception"] == "RuntimeError"
    assert "broken" in body["detail"]
    assert server.active == 0
    assert server.tracker.close_counts() == [1]


def test_stateless_routes_respect_capacity(serve):
    server = serve(max_sessions=1)
    with connect(server.ws_url) as ws, httpx.Client(base_url=server.url, timeout=10) as http:
        server.wait_active(1)
        r = http.post("/reset", json={})
        assert r.status_code == 503
        assert r.json()["error"]["code"] == "CAPACITY_REACHED"
        ws.close()
        server.wait_active(0)
        assert http.post("/reset", json={}).status_code == 200


def test_factory_error_over_http_is_500(serve):
    server = serve(make_env(fail_on_init=True))
    r = httpx.post(f"{server.url}/reset", json={}, timeout=10)
    assert r.status_code == 500
    assert r.json()["error"]["code"] == "FACTORY_ERROR"
    assert server.active == 0


def test_wrong_method_is_405(http):
    assert http.get("/reset").status_code == 405
    assert http.post("/health").status_code == 405


def test_unknown_route_is_404(http):
    assert http.get("/nope").status_code == 404


# --- /mcp --------------------------------------------------------------------------------------


def test_mcp_empty_object_is_invalid_request(http):
    r = http.post("/mcp", json={})
    assert r.status_code == 200
    body = r.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None
    assert body["error"]["code"] == -32600


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"jsonrpc": "2.0", "method": "tools/call", "id": "x", "params": {}}, -32602),
        ({"jsonrpc": "2.0", "method": "tools/call", "id": 4, "params": {"name": "nope"}}, -32602),
        ({"jsonrpc": "2.0", "method": "resources/list", "id": 2}, -32601),
        ({"jsonrpc": "1.0", "method": "tools/list", "id": 3}, -32600),
        ([{"jsonrpc": "2.0", "method": "tools/list", "id": 1}], -32600),
    ],
)
def test_mcp_json_rpc_errors(http, payload, code):
    r = http.post("/mcp", json=payload)
    assert r.status_code == 200
    body = r.json()
    assert body["error"]["code"] == code
    if isinstance(payload, dict):
        assert body["id"] == payload["id"]


def test_mcp_tools_list_in_upstreams_dialect(http):
    # Plain JSON-RPC (upstream's MCPToolClient) lists the env's one tool; tests/mcp has the rest.
    body = http.post("/mcp", json={"jsonrpc": "2.0", "method": "tools/list", "id": 1}).json()
    assert [t["name"] for t in body["result"]["tools"]] == ["t"]


def test_mcp_unparsable_json_is_parse_error(http):
    r = http.post("/mcp", content=b"{nope")
    assert r.status_code == 200
    assert r.json()["error"]["code"] == -32700


def test_http_never_sees_observation_signals_in_the_body(http):
    # reward/done travel beside the observation, never inside it (as upstream)
    obs = http.post("/reset", json={}).json()["observation"]
    assert set(obs) == set(TObservation.model_fields) - set(Observation.model_fields) | {"metadata"}


# --- root page and /docs ---------------------------------------------------------------------


def test_root_page_says_what_the_server_is(serve):
    env = make_env(env_name="named_env", env_description="Does tests.", env_version="9.9")
    with httpx.Client(base_url=serve(env, web=True).url, timeout=10) as http:
        r = http.get("/")
        info = http.get("/", headers={"accept": "application/json"}).json()
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "<h1>named_env 9.9</h1>" in page
    assert "Does tests." in page
    for link in ("/schema", "/openapi.json", "/docs", "/web/"):
        assert f'href="{link}"' in page
    from openenv import __version__

    assert info == {
        "name": "named_env", "description": "Does tests.", "version": "9.9", "openenv_version": __version__,
        "links": {"schema": "/schema", "openapi": "/openapi.json", "docs": "/docs", "health": "/health",
                  "metadata": "/metadata", "websocket": "/ws", "web": "/web/"},
    }


def test_root_page_links_no_playground_when_it_is_off(serve):
    with httpx.Client(base_url=serve(web=False).url, timeout=10) as http:
        assert "web" not in http.get("/", headers={"accept": "application/json"}).json()["links"]
        assert 'href="/web/"' not in http.get("/").text
        assert http.get("/web/").status_code == 404


def test_docs_page_lists_every_operation_without_a_cdn(http):
    doc = http.get("/openapi.json").json()
    r = http.get("/docs")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    for path, item in doc["paths"].items():
        for method in item:
            assert f"<td><code>{method.upper()}</code></td><td><code>{path}</code></td>" in r.text
    assert "<script" not in r.text
    assert "https://" not in r.text
    assert "http://" not in r.text
    assert doc["paths"]["/"]["get"]["responses"]["200"]["content"].keys() == {"application/json", "text/html"}
