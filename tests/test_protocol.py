"""``openenv._protocol``: message models, the request parser, the codec and reply shapes."""

from __future__ import annotations

import datetime as dt

import msgpack
import orjson
import pytest
from pydantic import ValidationError

from openenv import InvalidJSON, UnknownMessageType, ValidationFailed, WireError
from openenv._exceptions import ExecutionError, ResetRequired
from openenv._protocol import (
    SERVER_MESSAGE,
    BatchMessage,
    BatchReply,
    ClosedReply,
    CloseMessage,
    ErrorReply,
    McpMessage,
    McpReply,
    ObservationReply,
    ResetData,
    ResetMessage,
    StateMessage,
    StateReply,
    StepMessage,
    classify_validation_error,
    decode_request,
    encode,
    error_message,
    observation_data,
    request_adapter,
    salvage_request_id,
)
from openenv._types import PROTOCOL_VERSION, SUBPROTOCOL

from ._envs import TAction, TObservation


@pytest.fixture(scope="module")
def adapter():
    return request_adapter(TAction)


def decode(adapter, obj, binary=False):
    frame = msgpack.packb(obj, use_bin_type=True) if binary else orjson.dumps(obj).decode()
    return decode_request(adapter, frame, binary)


def test_subprotocol_and_version_constants():
    assert SUBPROTOCOL == "openenv.v1"
    assert PROTOCOL_VERSION == "1.0"


# --- parsing requests -----------------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True])
def test_step_is_parsed_into_the_env_action_model(adapter, binary):
    msg = decode(adapter, {"type": "step", "data": {"message": "hi", "sleep_s": 0.5}}, binary)
    assert isinstance(msg, StepMessage)
    assert isinstance(msg.data, TAction)
    assert msg.data.message == "hi"
    assert msg.data.sleep_s == 0.5
    assert msg.id is None
    assert msg.session is None


def test_reset_data_keeps_seed_episode_and_extra_options(adapter):
    msg = decode(adapter, {"type": "reset", "data": {"seed": 7, "episode_id": "ep", "max_steps": 3}})
    assert isinstance(msg, ResetMessage)
    assert msg.data.seed == 7
    assert msg.data.episode_id == "ep"
    assert msg.data.model_extra == {"max_steps": 3}


def test_reset_without_data_gets_empty_reset_data(adapter):
    msg = decode(adapter, {"type": "reset"})
    assert isinstance(msg, ResetMessage)
    assert msg.data.seed is None
    assert msg.data.episode_id is None
    assert not msg.data.model_extra


@pytest.mark.parametrize(
    ("obj", "cls"),
    [
        ({"type": "state"}, StateMessage),
        ({"type": "close"}, CloseMessage),
        ({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list", "id": 1}}, McpMessage),
    ],
)
def test_other_message_types(adapter, obj, cls):
    assert isinstance(decode(adapter, obj), cls)


def test_id_and_session_are_kept(adapter):
    msg = decode(adapter, {"type": "state", "id": "abc", "session": "s1"})
    assert (msg.id, msg.session) == ("abc", "s1")
    msg = decode(adapter, {"type": "state", "id": 12})
    assert msg.id == 12


def test_batch_parses_each_item_by_type(adapter):
    msg = decode(
        adapter,
        {
            "type": "batch",
            "id": 1,
            "messages": [
                {"type": "reset", "session": "a"},
                {"type": "step", "session": "a", "data": {"message": "x"}},
                {"type": "state", "session": "b"},
                {"type": "close", "session": "b"},
            ],
        },
    )
    assert isinstance(msg, BatchMessage)
    kinds = [type(m) for m in msg.messages]
    assert kinds == [ResetMessage, StepMessage[TAction], StateMessage, CloseMessage]
    assert isinstance(msg.messages[1].data, TAction)


def test_malformed_json_is_invalid_json(adapter):
    with pytest.raises(InvalidJSON, match="Invalid JSON"):
        decode_request(adapter, '{"type": "reset"', False)


def test_garbage_msgpack_is_invalid_json(adapter):
    with pytest.raises(InvalidJSON, match="msgpack"):
        decode_request(adapter, b"\xc1\xc1\xc1", True)


@pytest.mark.parametrize("obj", [{"type": "teleport"}, {}, {"data": {}}, {"type": 5}])
def test_unknown_or_missing_type_is_unknown_type(adapter, obj):
    with pytest.raises(UnknownMessageType):
        decode(adapter, obj)


def test_invalid_action_is_validation_error_with_errors_list(adapter):
    with pytest.raises(ValidationFailed) as info:
        decode(adapter, {"type": "step", "data": {"message": 5}})
    errors = info.value.details["errors"]
    assert isinstance(errors, list)
    assert errors
    assert errors[0]["loc"] == ["message"]  # relative to the action, as upstream
    assert errors[0]["type"] == "string_type"
    assert set(errors[0]) == {"type", "loc", "msg"}
    orjson.dumps(info.value.to_wire())  # the errors are JSON-safe


def test_unknown_action_field_is_rejected(adapter):
    with pytest.raises(ValidationFailed) as info:
        decode(adapter, {"type": "step", "data": {"message": "x", "bogus": 1}})
    assert info.value.details["errors"][0]["type"] == "extra_forbidden"


def test_step_without_data_is_rejected(adapter):
    with pytest.raises(ValidationFailed):
        decode(adapter, {"type": "step"})


def test_unknown_request_key_is_rejected(adapter):
    with pytest.raises(ValidationFailed, match=r"Invalid message: extra: unknown field \(not in the model\)"):
        decode(adapter, {"type": "reset", "extra": 1})


def test_validation_error_names_each_field(adapter):
    with pytest.raises(ValidationFailed) as info:
        decode(adapter, {"type": "step", "data": {"mesage": "x", "sleep_s": "long"}})
    assert str(info.value) == (
        "Invalid action: sleep_s: Input should be a valid number, unable to parse string as a number; "
        "mesage: unknown field (not in the model)"
    )


@pytest.mark.parametrize("frame", ["[1, 2]", '"text"', "3"])
def test_non_object_frame_is_a_validation_error(adapter, frame):
    with pytest.raises(ValidationFailed):
        decode_request(adapter, frame, False)


@pytest.mark.parametrize(
    "data",
    [{"seed": -1}, {"episode_id": "x" * 256}, {"seed": "abc"}],
)
def test_reset_data_limits(adapter, data):
    with pytest.raises(ValidationFailed):
        decode(adapter, {"type": "reset", "data": data})


def test_session_key_length_limit(adapter):
    assert decode(adapter, {"type": "state", "session": "s" * 128}).session == "s" * 128
    with pytest.raises(ValidationFailed):
        decode(adapter, {"type": "state", "session": "s" * 129})


def test_batch_size_limit(adapter):
    item = {"type": "state", "session": "a"}
    assert len(decode(adapter, {"type": "batch", "messages": [item] * 4096}).messages) == 4096
    with pytest.raises(ValidationFailed):
        decode(adapter, {"type": "batch", "messages": [item] * 4097})


def test_batch_cannot_nest_batch_or_mcp(adapter):
    with pytest.raises(WireError):
        decode(adapter, {"type": "batch", "messages": [{"type": "batch", "messages": []}]})
    with pytest.raises(WireError):
        decode(adapter, {"type": "batch", "messages": [{"type": "mcp", "data": {}}]})


def test_batch_with_an_invalid_item_fails_as_a_whole(adapter):
    with pytest.raises(ValidationFailed) as info:
        decode(
            adapter,
            {
                "type": "batch",
                "messages": [
                    {"type": "state", "session": "a"},
                    {"type": "step", "session": "b", "data": {"message": 5}},
                ],
            },
        )
    assert info.value.details["errors"][0]["loc"][:2] == ["messages", 1]  # tag dropped


def test_classify_validation_error_maps_json_invalid():
    with pytest.raises(ValidationError) as info:
        ResetData.model_validate_json("{nope")
    assert isinstance(classify_validation_error(info.value), InvalidJSON)


# --- salvaging ids from bad frames ------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "binary", "expected"),
    [
        ('{"type": "x", "id": 4, "session": "s"}', False, (4, "s")),
        ('{"id": "r1"}', False, ("r1", None)),
        ('{"id": true, "session": 3}', False, (None, None)),
        ('{"id": 1.5}', False, (None, None)),
        ("not json", False, (None, None)),
        ("[1]", False, (None, None)),
        (msgpack.packb({"id": 9, "session": "b"}), True, (9, "b")),
        (b"\xc1", True, (None, None)),
    ],
)
def test_salvage_request_id(frame, binary, expected):
    assert salvage_request_id(frame, binary) == expected


# --- encoding replies --------------------------------------------------------------------


def test_encode_json_is_compact_text():
    out = encode({"type": "state", "data": {"a": [1, 2]}}, False)
    assert out == '{"type":"state","data":{"a":[1,2]}}'


def test_encode_msgpack_round_trips_bytes():
    out = encode({"type": "state", "data": {"blob": b"\x00\xff"}}, True)
    assert isinstance(out, bytes)
    assert msgpack.unpackb(out, raw=False) == {"type": "state", "data": {"blob": b"\x00\xff"}}


@pytest.mark.parametrize("binary", [False, True])
def test_encode_falls_back_to_pydantic_for_other_types(binary):
    when = dt.datetime(2024, 1, 2, 3, 4, 5)
    out = encode({"when": when, "obs": TObservation(message="m")}, binary)
    decoded = msgpack.unpackb(out, raw=False) if binary else orjson.loads(out)
    assert decoded["when"].startswith("2024-01-02T03:04:05")
    assert decoded["obs"]["message"] == "m"


# --- observation reply data --------------------------------------------------------------


def test_observation_data_upstream_shape():
    obs = TObservation(message="m", reward=0.5, done=True)
    data = observation_data(obs, binary=False, extended=False)
    assert set(data) == {"observation", "reward", "done"}
    assert data["reward"] == 0.5
    assert data["done"] is True
    body = data["observation"]
    assert "reward" not in body
    assert "done" not in body
    assert "truncated" not in body
    assert body["metadata"] == {}
    assert body["message"] == "m"


def test_observation_data_repeats_non_empty_metadata_at_top_level():
    data = observation_data(TObservation(metadata={"k": 1}), binary=False, extended=False)
    assert data["metadata"] == {"k": 1}
    assert data["observation"]["metadata"] == {"k": 1}


def test_observation_data_adds_truncated_only_when_extended():
    obs = TObservation(done=True, truncated=True)
    assert "truncated" not in observation_data(obs, binary=False, extended=False)
    assert observation_data(obs, binary=False, extended=True)["truncated"] is True


def test_observation_data_bytes_base64_in_json_raw_in_msgpack():
    obs = TObservation(blob=b"\x00\x01\xff")
    assert observation_data(obs, binary=False, extended=True)["observation"]["blob"] == "AAH_"
    assert observation_data(obs, binary=True, extended=True)["observation"]["blob"] == b"\x00\x01\xff"


def test_error_message_tags_only_given_id_and_session():
    err = ResetRequired("first reset")
    assert error_message(err, None, None) == {
        "type": "error",
        "data": {"message": "first reset", "code": "RESET_REQUIRED"},
    }
    tagged = error_message(err, 3, "s")
    assert tagged["id"] == 3
    assert tagged["session"] == "s"


# --- reply models ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "cls"),
    [
        (
            {"type": "observation", "data": {"observation": {}, "reward": None, "done": False}},
            ObservationReply,
        ),
        ({"type": "state", "data": {"step_count": 0}}, StateReply),
        ({"type": "error", "data": {"message": "m", "code": "X", "errors": []}}, ErrorReply),
        ({"type": "closed", "id": 1}, ClosedReply),
        ({"type": "mcp", "data": {"jsonrpc": "2.0"}}, McpReply),
        ({"type": "batch", "id": 2, "data": [{"type": "closed", "session": "a"}]}, BatchReply),
    ],
)
def test_server_message_adapter_picks_the_reply_model(reply, cls):
    assert isinstance(SERVER_MESSAGE.validate_python(reply), cls)


def test_server_message_rejects_unknown_reply_type():
    with pytest.raises(ValidationError):
        SERVER_MESSAGE.validate_python({"type": "nope", "data": {}})


def test_error_reply_needs_code_and_message():
    with pytest.raises(ValidationError):
        SERVER_MESSAGE.validate_python({"type": "error", "data": {"message": "m"}})


def test_error_message_validates_as_error_reply():
    msg = error_message(ExecutionError("boom", exception="RuntimeError"), "r", "s")
    reply = SERVER_MESSAGE.validate_python(msg)
    assert isinstance(reply, ErrorReply)
    assert reply.data.code == "EXECUTION_ERROR"
    assert reply.data.model_extra == {"exception": "RuntimeError"}
