"""Decoding bounded on the event loop (issue 34): a frame's values are counted (in C,
without a parse) before it is validated, so what it may cost does not grow with its
size; a frame over ``MAX_VALUES`` is refused with ``VALIDATION_ERROR``."""

from __future__ import annotations

from typing import Any, cast

import msgpack
import orjson
import pytest

from openenv._exceptions import ValidationFailed
from openenv._protocol import MAX_VALUES, SCAN_FROM, decode_request, request_adapter, too_many_json_values

from .._envs import TAction
from .._wire import call, connect, expect_error

M = MAX_VALUES
ADAPTER = request_adapter(TAction)


@pytest.mark.parametrize(
    ("value", "too_many"),
    [
        ({"a": "x," * (M * 3)}, False),  # commas inside a string are not values
        ({"a": [0] * (M + 2)}, True),
        ({"a": [0] * (M - 2)}, False),
        ({"a": 'x\\",' * (M // 2), "b": [0] * 100}, False),  # escaped quotes do not end it
        ({"a": 'x\\",' * (M // 2), "b": [0] * (M + 5)}, True),
        ({"a": "x\\\\" * M + ",,," * M, "b": [0] * 100}, False),  # escaped backslashes
        ({"a": "x\\" * M + ",,," * M, "b": [0] * 100}, False),
        ({f"k{i}": 0 for i in range(2 * M + 1)}, True),  # more than 2 * MAX_VALUES keys
        ({"a": '"' * (4 * M + 1)}, True),  # quotes over the limit, whatever they are
    ],
)
def test_values_are_counted_outside_strings(value: object, too_many: bool) -> None:
    text = orjson.dumps(value)
    assert too_many_json_values(text.decode()) is too_many
    assert too_many_json_values(text) is too_many  # bytes (an HTTP body) too


def test_a_small_frame_is_never_counted() -> None:
    frame = orjson.dumps({"type": "step", "data": {"message": "x", "metadata": {"a": [0] * 20000}}}).decode()
    assert len(frame) <= SCAN_FROM
    assert decode_request(ADAPTER, frame, False).data.metadata["a"] == [0] * 20000


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize(
    "data",
    [
        {"type": "batch", "messages": [{"type": "step", "session": "s", "data": {"message": "x"}}] * 300_000},
        {"type": "step", "data": {"message": "", "metadata": {f"k{i}": 0 for i in range(1_150_000)}}},
        {"type": "step", "data": {"message": "", "metadata": {"a": [[0] * 4000] * 4000}}},
    ],
    ids=["batch-300k", "metadata-1.15M-keys", "nested-16M"],
)
def test_dense_frames_are_refused_before_validation(data: dict[str, object], binary: bool) -> None:
    frame = msgpack.packb(data) if binary else orjson.dumps(data).decode()
    validated: list[str] = []

    class Spy:  # the adapter, noting each validation (which took 1-2 s on such frames)
        def validate_json(self, *args: Any) -> Any:
            validated.append("json")
            return ADAPTER.validate_json(*args)

        def validate_python(self, *args: Any) -> Any:
            validated.append("python")
            return ADAPTER.validate_python(*args)

    with pytest.raises(ValidationFailed) as info:
        decode_request(cast(Any, Spy()), frame, binary)
    assert info.value.details["max_values"] == MAX_VALUES
    assert validated == []  # refused on the count alone


def test_big_sparse_frames_are_still_read() -> None:
    text = "line, with, commas\n" * 500_000  # 9.5 MB of text in one string
    frame = orjson.dumps({"type": "step", "data": {"message": text}}).decode()
    assert decode_request(ADAPTER, frame, False).data.message == text
    blob = msgpack.packb({"type": "step", "data": {"message": text, "metadata": {"n": list(range(1000))}}})
    assert decode_request(ADAPTER, blob, True).data.metadata["n"] == list(range(1000))


@pytest.mark.parametrize("binary", [False, True])
def test_a_refused_dense_frame_is_answered_and_the_connection_goes_on(server, binary: bool) -> None:
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset", "id": 1}, binary)
        metadata = {f"k{i}": 0 for i in range(200_000)}
        dense = {"type": "step", "id": 2, "data": {"message": "", "metadata": metadata}}
        expect_error(call(ws, dense, binary), "VALIDATION_ERROR")
        reply = call(ws, {"type": "step", "id": 3, "data": {"message": "after"}}, binary)
        assert (reply["type"], reply["id"]) == ("observation", 3)
