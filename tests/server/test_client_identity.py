"""Who a client is, for its session quota: the socket's peer, which no header changes,
unless the operator names trusted proxies; and a quota by default, so one client
cannot take every slot. Real servers on real sockets (the production uvicorn stack)."""

from __future__ import annotations

import httpx

from openenv.server._serve import uvicorn_options
from openenv.server._settings import ServerSettings


def _http(server, local_address=None):
    transport = httpx.HTTPTransport(local_address=local_address) if local_address else None
    return httpx.Client(base_url=server.url, timeout=10, transport=transport)


FORWARDING = [
    {"x-forwarded-for": "10.0.0.1"},
    {"x-forwarded-for": "10.0.0.2, 127.0.0.1"},
    {"forwarded": "for=10.0.0.3"},
    {"x-real-ip": "10.0.0.4"},
]


def test_forwarding_headers_do_not_change_the_client(serve):
    server = serve(max_sessions_per_client=2)
    with _http(server) as http:
        answers = [http.post("/sessions", headers=h) for h in FORWARDING]
    assert [r.status_code for r in answers] == [201, 201, 429, 429]
    assert answers[-1].json()["error"]["client"] == "127.0.0.1"
    assert server.manager.per_client == {"127.0.0.1": 2}


def test_a_trusted_proxy_s_forwarding_header_names_the_client(serve):
    server = serve(max_sessions_per_client=1, forwarded_allow_ips="127.0.0.1")
    with _http(server) as http:
        answers = [http.post("/sessions", headers={"x-forwarded-for": f"10.0.0.{i}"}) for i in (1, 2, 2)]
    assert [r.status_code for r in answers] == [201, 201, 429]
    assert answers[-1].json()["error"]["client"] == "10.0.0.2"
    # a proxy that is not trusted is its own client, whatever it forwards
    other = serve(max_sessions_per_client=1, forwarded_allow_ips="10.9.9.9")
    with _http(other) as http:
        forwarded = ("10.0.0.1", "10.0.0.2")
        codes = [http.post("/sessions", headers={"x-forwarded-for": ip}).status_code for ip in forwarded]
    assert codes == [201, 429]


def test_uvicorn_trusts_no_proxy_unless_told():
    assert uvicorn_options(ServerSettings())["proxy_headers"] is False
    told = uvicorn_options(ServerSettings(forwarded_allow_ips="10.0.0.1,10.0.0.2"))
    assert (told["proxy_headers"], told["forwarded_allow_ips"]) == (True, "10.0.0.1,10.0.0.2")


def test_one_client_cannot_take_every_slot_by_default(serve):
    default = ServerSettings().max_sessions_per_client  # the test profile turns it off: ask for it
    server = serve(max_sessions=8, max_sessions_per_client=default)  # a quarter kept for others
    with _http(server) as http, _http(server, local_address="127.0.0.2") as other:
        codes = [http.post("/sessions").status_code for _ in range(12)]
        assert codes == [201] * 6 + [429] * 6
        refused = http.post("/sessions").json()["error"]
        assert (refused["code"], refused["max_sessions_per_client"]) == ("QUOTA_EXCEEDED", 6)
        assert [other.post("/sessions").status_code for _ in range(3)] == [201, 201, 503]
    assert server.manager.active == 8
    assert ServerSettings().client_quota == 768  # of the default 1,024


def test_zero_turns_the_quota_off(serve):
    server = serve(max_sessions=8, max_sessions_per_client=0)
    with _http(server) as http:
        codes = [http.post("/sessions").status_code for _ in range(9)]
    assert codes == [201] * 8 + [503]  # only capacity stops it
