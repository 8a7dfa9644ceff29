"""``openenv._exceptions``: the tree, the codes, and the wire round trip."""

from __future__ import annotations

import pytest

import openenv
from openenv import _exceptions as ex
from openenv._exceptions import (
    WIRE_ERRORS,
    ConnectError,
    ConnectionClosed,
    ErrorCode,
    OpenEnvError,
    RequestTimeout,
    TransportError,
    WireError,
    error_from_wire,
)

EXPECTED = {
    "INVALID_JSON": (ex.InvalidJSON, 422),  # FastAPI answers a non-JSON body with 422 (upstream)
    "UNKNOWN_TYPE": (ex.UnknownMessageType, 400),
    "VALIDATION_ERROR": (ex.ValidationFailed, 422),
    "EXECUTION_ERROR": (ex.ExecutionError, 500),
    "CAPACITY_REACHED": (ex.CapacityReached, 503),
    "FACTORY_ERROR": (ex.FactoryError, 500),
    "SESSION_ERROR": (ex.SessionError, 409),
    "RESET_REQUIRED": (ex.ResetRequired, 409),
    "SESSION_CLOSED": (ex.SessionClosed, 410),
    "SESSION_NOT_FOUND": (ex.SessionNotFound, 404),
    "FRAME_TOO_LARGE": (ex.FrameTooLarge, 413),
    "SESSION_BUSY": (ex.SessionBusy, 409),
    "DEADLINE_EXCEEDED": (ex.DeadlineExceeded, 504),
    "TASK_NOT_FOUND": (ex.TaskNotFound, 404),
    "QUOTA_EXCEEDED": (ex.QuotaExceeded, 429),
    "UNAUTHORIZED": (ex.Unauthorized, 401),
    "FORBIDDEN": (ex.Forbidden, 403),
}


def test_every_code_has_exactly_one_class():
    assert {c.value for c in ErrorCode} == set(EXPECTED)
    assert set(WIRE_ERRORS) == set(ErrorCode)
    assert len(set(WIRE_ERRORS.values())) == len(ErrorCode)



def test_a_subclass_without_a_code_keeps_its_base_code_and_is_not_registered():
    before = dict(WIRE_ERRORS)

    class Mine(ex.CapacityReached):  # as upstream's SessionCapacityError
        pass

    assert (Mine.code, Mine.http_status) == (ErrorCode.CAPACITY_REACHED, 503)
    assert before == WIRE_ERRORS


def test_a_second_class_for_a_code_or_one_without_a_status_is_refused():
    with pytest.raises(TypeError, match="taken"):

        class Again(WireError, code=ErrorCode.INVALID_JSON, http_status=400):
            pass

    assert WIRE_ERRORS[ErrorCode.INVALID_JSON] is ex.InvalidJSON


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_code_maps_to_class_and_http_status(code):
    cls, status = EXPECTED[code]
    assert WIRE_ERRORS[ErrorCode(code)] is cls
    assert cls.code == ErrorCode(code)
    assert cls.http_status == status


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_wire_round_trip(code):
    cls, _ = EXPECTED[code]
    err = cls(f"{code} happened", extra=1, errors=[{"loc": ["a"]}])
    wire = err.to_wire()
    assert wire == {"message": f"{code} happened", "code": code, "extra": 1,
                    "errors": [{"loc": ["a"]}]}
    back = error_from_wire(wire)
    assert type(back) is cls
    assert back.message == err.message
    assert back.details == err.details
    assert back.to_wire() == wire
    assert str(back) == f"{code} happened"


def test_unknown_code_becomes_plain_wire_error_keeping_the_code():
    err = error_from_wire({"code": "BRAND_NEW", "message": "from the future", "hint": "x"})
    assert type(err) is WireError
    assert err.message == "from the future"
    assert err.details == {"hint": "x", "code": "BRAND_NEW"}


def test_missing_code_and_message():
    err = error_from_wire({})
    assert type(err) is WireError
    assert err.message == "server error"
    assert err.details["code"] is None


def test_error_from_wire_does_not_mutate_its_input():
    data = {"code": "EXECUTION_ERROR", "message": "m", "exception": "KeyError"}
    error_from_wire(data)
    assert data == {"code": "EXECUTION_ERROR", "message": "m", "exception": "KeyError"}


def test_message_is_stringified():
    assert error_from_wire({"code": "INVALID_JSON", "message": 42}).message == "42"


def test_transport_errors_are_not_wire_errors():
    for cls in (TransportError, ConnectError, ConnectionClosed, RequestTimeout):
        assert not issubclass(cls, WireError)
    assert issubclass(OpenEnvError, Exception)


def test_connection_closed_carries_code_and_reason():
    err = ConnectionClosed("closed", 4408, "idle timeout")
    assert (err.code, err.reason, str(err)) == (4408, "idle timeout", "closed")
    assert ConnectionClosed("x").code is None


def test_exceptions_are_exported_from_the_package():
    for cls, _ in EXPECTED.values():
        assert getattr(openenv, cls.__name__) is cls


@pytest.mark.parametrize(
    ("name", "home", "builtin"),
    [
        ("ServeFailed", "openenv.server._serve", RuntimeError),
        ("ManifestError", "openenv._manifest", ValueError),
        ("InitError", "openenv.authoring._init", ValueError),
        ("ProbeError", "openenv.authoring._probe", Exception),
        ("EnvNotFound", "openenv.server._serve", LookupError),
        ("UnknownTool", "openenv.mcp._tools", LookupError),
        ("MissingExtra", "openenv._extras", ImportError),
    ],
)
def test_tool_errors_are_in_the_tree_and_still_where_they_were(name, home, builtin):
    import importlib

    from openenv import _exceptions

    cls = getattr(_exceptions, name)
    assert cls.__module__ == "openenv._exceptions"
    assert issubclass(cls, OpenEnvError)
    assert issubclass(cls, builtin)  # `except ValueError` still works
    assert getattr(importlib.import_module(home), name) is cls
    assert name in (_exceptions.__doc__ or "")  # drawn in the tree


def test_details_past_64_bits_still_encode() -> None:
    import orjson

    from openenv._exceptions import TaskNotFound

    huge = 314204585171857905787061927936
    err = TaskNotFound(f"no task at index {huge}", index=huge)
    data = orjson.loads(orjson.dumps(err.to_wire()))  # raised TypeError before: a 500 on the wire
    assert data["index"] == "314204585171857905787061927936"
    assert data["code"] == err.code.value
