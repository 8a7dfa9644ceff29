"""The protocol RFC and the code list the same messages, codes and routes."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from openenv import _protocol
from openenv._exceptions import WIRE_ERRORS, ErrorCode

RFC = (Path(__file__).parents[1] / "rfcs" / "0001-env-protocol.md").read_text()


def _tags(union: object) -> set[str]:
    annotated = typing.get_origin(union) is typing.Annotated
    members = typing.get_args(typing.get_args(union)[0]) if annotated else ()
    return {typing.get_args(m.model_fields["type"].annotation)[0] for m in members}


def test_every_error_code_is_in_the_rfc_table_with_its_class_and_status() -> None:
    for code in ErrorCode:
        cls = WIRE_ERRORS[code]
        row = re.search(rf"^\| `{code.value}`.*$", RFC, re.MULTILINE)
        assert row, f"{code.value} missing from the RFC error table"
        assert f"`{cls.__name__}`" in row.group(0)
        assert f"| {cls.http_status} |" in row.group(0)


def test_every_request_type_is_documented() -> None:
    adapter_union = typing.get_args(_protocol.AnyRequest)
    tags = {typing.get_args(m.model_fields["type"].annotation)[0] for m in adapter_union}
    assert tags == {"reset", "step", "state", "close", "mcp", "batch"}
    for tag in tags:
        assert f"| `{tag}`" in RFC, tag


def test_every_reply_type_is_documented() -> None:
    tags = _tags(_protocol.ServerMessage)
    assert tags == {"observation", "state", "error", "closed", "mcp", "batch"}
    for tag in tags:
        assert f"| `{tag}`" in RFC, tag


def test_subprotocol_and_idle_close_code_match() -> None:
    from openenv._types import SUBPROTOCOL
    from openenv.server._ws import CLOSE_CAPACITY, CLOSE_IDLE

    assert f"**`{SUBPROTOCOL}`**" in RFC
    assert f"**{CLOSE_IDLE}**" in RFC
    assert f"code {CLOSE_CAPACITY} for capacity" in RFC


def test_every_http_route_is_documented() -> None:
    from openenv.server import create_app
    from openenv.server._openapi import ApiRoute

    from ._envs import make_env

    routes = [r for r in create_app(make_env()).routes if isinstance(r, ApiRoute)]  # the core's
    assert len(routes) >= 14
    for route in routes:
        path = route.path.replace("{sid}", "{id}")
        for method in route.methods - {"HEAD"}:
            assert re.search(rf"\| {method} \| `{re.escape(path)}` \|", RFC), f"{method} {path}"
