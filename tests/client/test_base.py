"""``openenv.client._base``: frames, ids, reply decoding, shared by both clients (no I/O)."""

from __future__ import annotations

import msgpack
import orjson
import pytest

from openenv import (
    GENERIC_MODELS,
    BatchError,
    ExecutionError,
    OpenEnvError,
    ResetRequired,
    StepResult,
    ValidationFailed,
    WireError,
)
from openenv._protocol import BatchReply, ClosedReply, ErrorReply, ObservationReply
from openenv.client import BaseEnvClient, ws_url

from .._envs import MODELS, TAction, TObservation, TState


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("http://h:8000", "ws://h:8000/ws"),
        ("http://h:8000/", "ws://h:8000/ws"),
        ("https://h/prefix", "wss://h/prefix/ws"),
        ("ws://h:1/ws", "ws://h:1/ws"),
        ("wss://h/x/ws/", "wss://h/x/ws"),
    ],
)
def test_ws_url(base, expected):
    assert ws_url(base) == expected


def test_ws_url_rejects_other_schemes():
    with pytest.raises(ValueError, match="must start with"):
        ws_url("ftp://h")


def client(**kwargs):
    return BaseEnvClient("http://127.0.0.1:1", MODELS, **kwargs)


def test_defaults():
    c = client()
    assert c.url == "ws://127.0.0.1:1/ws"
    assert c.subprotocols == ["openenv.v1"]
    assert c.extended is False
    assert client(extensions=False).subprotocols == []


def test_frames_get_fresh_ids_only_on_extended_connections():
    c = client()
    frame, rid = c._frame({"type": "state"})
    assert rid is None
    assert orjson.loads(frame) == {"type": "state"}
    c.extended = True
    ids = [c._frame({"type": "state"})[1] for _ in range(3)]
    assert ids == [1, 2, 3]
    assert orjson.loads(c._frame({"type": "state"})[0])["id"] == 4


def test_binary_frames_are_msgpack():
    c = client(binary=True)
    frame, _ = c._frame({"type": "step", "data": {"blob": b"\x00"}})
    assert isinstance(frame, bytes)
    assert msgpack.unpackb(frame, raw=False) == {"type": "step", "data": {"blob": b"\x00"}}


def test_is_reply_to_matches_ids():
    def state(**extra):
        return parsed({"type": "state", "data": {}, **extra})

    assert BaseEnvClient._is_reply_to(state(), None)
    assert BaseEnvClient._is_reply_to(state(id=3), 3)
    assert not BaseEnvClient._is_reply_to(state(id=2), 3)
    assert not BaseEnvClient._is_reply_to(state(), 3)


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "[1]",
        '{"no": "type"}',
        '{"type": 1}',
        '{"type": "unknown"}',
        '{"type": "observation", "data": {"done": false}}',  # no observation
        '{"type": "error", "data": "odd"}',  # an error frame without code and message
    ],
)
def test_decode_rejects_non_messages(raw):
    with pytest.raises(OpenEnvError):
        client()._decode(raw)


def test_decode_msgpack_when_binary():
    reply = client(binary=True)._decode(msgpack.packb({"type": "closed", "id": 2}))
    assert reply == ClosedReply(type="closed", id=2)


def test_replies_are_parsed_once_into_the_tagged_wire_models():
    reply = parsed(obs_reply(done=True))
    assert isinstance(reply, ObservationReply)
    assert reply.data.done is True
    error = parsed({"type": "error", "data": {"code": "RESET_REQUIRED", "message": "m", "extra": 1}})
    assert isinstance(error, ErrorReply)
    assert error.data.model_dump() == {"code": "RESET_REQUIRED", "message": "m", "extra": 1}
    batch = parsed({"type": "batch", "data": [obs_reply(), {"type": "closed"}]})
    assert isinstance(batch, BatchReply)
    assert [type(item) for item in batch.data] == [ObservationReply, ClosedReply]


def test_action_payload_excludes_unset_fields():
    c = client()
    assert c._action_payload(TAction(message="m")) == {"message": "m"}
    assert c._action_payload({"message": "m", "x": 1}) == {"message": "m", "x": 1}
    with pytest.raises(TypeError, match="pydantic model or a mapping"):
        c._action_payload(["nope"])


def test_reset_message_puts_options_seed_and_episode_in_data():
    msg = client()._reset_message(3, "ep", {"level": 2}, None)
    assert msg == {"type": "reset", "data": {"level": 2, "seed": 3, "episode_id": "ep"}}


def test_named_sessions_and_batch_need_extensions():
    c = client()
    with pytest.raises(OpenEnvError, match=r"openenv\.v1"):
        c._with_session({"type": "state"}, "a")
    with pytest.raises(OpenEnvError, match="batch"):
        c._batch_message([])
    c.extended = True
    assert c._with_session({"type": "state"}, "a") == {"type": "state", "session": "a"}
    assert c._batch_message([{"type": "state"}]) == {"type": "batch", "messages": [{"type": "state"}]}


def parsed(msg):
    """A reply as the clients see it: parsed at the edge into its reply model."""
    return BaseEnvClient("http://h")._decode(orjson.dumps(msg))


def obs_reply(**data):
    body = {"observation": {"message": "m", "metadata": {}}, "reward": 0.5, "done": False}
    body.update(data)
    return {"type": "observation", "data": body}


def test_result_builds_the_typed_observation_with_signals():
    result = client()._result(parsed(obs_reply(done=True, truncated=True)))
    assert isinstance(result, StepResult)
    assert isinstance(result.observation, TObservation)
    assert result.observation.reward == 0.5
    assert result.observation.done is True
    assert result.observation.truncated is True
    assert (result.reward, result.terminated, result.truncated, result.done) == (0.5, False, True, True)


def test_result_terminated_when_done_without_truncated():
    result = client()._result(parsed(obs_reply(done=True)))
    assert (result.terminated, result.truncated) == (True, False)


def test_result_metadata_from_top_level_or_observation():
    assert client()._result(parsed(obs_reply(metadata={"a": 1}))).metadata == {"a": 1}
    reply = obs_reply()
    reply["data"]["observation"]["metadata"] = {"b": 2}
    assert client()._result(parsed(reply)).metadata == {"b": 2}


def test_result_with_generic_models_is_the_raw_dict():
    c = BaseEnvClient("http://h", GENERIC_MODELS)
    result = c._result(parsed(obs_reply()))
    assert result.observation == {"message": "m", "metadata": {}}
    assert c._state(parsed({"type": "state", "data": {"step_count": 1}})) == {"step_count": 1}


@pytest.mark.parametrize("models", [GENERIC_MODELS, MODELS], ids=["untyped", "typed"])
def test_a_truncated_episode_is_done_but_not_terminated_on_every_client(models):
    c = BaseEnvClient("http://h", models)
    truncated = c._result(parsed(obs_reply(done=True, truncated=True)))
    assert (truncated.done, truncated.terminated, truncated.truncated) == (True, False, True)
    terminated = c._result(parsed(obs_reply(done=True)))
    assert (terminated.done, terminated.terminated, terminated.truncated) == (True, True, False)
    going_on = c._result(parsed(obs_reply()))
    assert (going_on.done, going_on.terminated, going_on.truncated) == (False, False, False)


def test_result_that_does_not_match_the_model_is_validation_failed():
    reply = obs_reply()
    reply["data"]["observation"]["unexpected"] = 1
    with pytest.raises(ValidationFailed, match="TObservation"):
        client()._result(parsed(reply))


def test_result_raises_the_wire_error():
    with pytest.raises(ResetRequired):
        client()._result(parsed({"type": "error", "data": {"code": "RESET_REQUIRED", "message": "m"}}))
    with pytest.raises(WireError, match="a message"):
        client()._result(parsed({"type": "error", "data": {"code": "NEW_CODE", "message": "a message"}}))


def test_result_rejects_other_reply_types():
    with pytest.raises(OpenEnvError, match="expected an observation"):
        client()._result(parsed({"type": "state", "data": {}}))
    with pytest.raises(OpenEnvError, match="expected a state"):
        client()._state(parsed(obs_reply()))


def test_state_is_typed():
    state = client()._state(parsed({"type": "state", "data": {"step_count": 2, "instance": 4}}))
    assert isinstance(state, TState)
    assert (state.step_count, state.instance) == (2, 4)


def test_batch_results_with_and_without_return_exceptions():
    reply = {"type": "batch", "data": [
        obs_reply(),
        {"type": "error", "data": {"code": "EXECUTION_ERROR", "message": "boom"}},
        obs_reply(reward=1.0),
    ]}
    out = client()._batch_results(parsed(reply), "observation", return_exceptions=True)
    assert isinstance(out[0], StepResult)
    assert isinstance(out[1], ExecutionError)
    assert out[2].reward == 1.0
    with pytest.raises(BatchError, match=r"1 of 3 batch items failed.*boom") as info:
        client()._batch_results(parsed(reply), "observation", return_exceptions=False)
    assert [type(r) for r in info.value.results] == [StepResult, ExecutionError, StepResult]


def test_batch_level_error_raises():
    reply = parsed({"type": "error", "data": {"code": "VALIDATION_ERROR", "message": "m"}})
    with pytest.raises(ValidationFailed):
        client()._batch_results(reply, "observation", True)


def test_close_callbacks_run_once_in_reverse_order():
    c = client()
    calls: list[int] = []
    c.on_close(lambda: calls.append(1))
    c.on_close(lambda: calls.append(2))
    c._run_close_callbacks()
    c._run_close_callbacks()
    assert calls == [2, 1]
