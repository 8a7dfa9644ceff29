"""Spaces <-> JSON Schema, and values <-> wire forms."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from echo_env import EchoAction, EchoObservation
from gymnasium import spaces

from openenv.gym import AnyText, schema_space, space_schema
from openenv.gym._arrays import decode_arrays, to_wire
from openenv.gym._spaces import describe, from_wire, rebuild

SPACES = [
    spaces.Discrete(3, start=-1),
    spaces.Box(-np.inf, np.inf, (4,), np.float32),
    spaces.Box(np.array([-1.0, 0.0]), np.array([1.0, 2.5]), dtype=np.float64),
    spaces.Box(0, 255, (2, 3), np.uint8),
    spaces.MultiDiscrete([3, 4]),
    spaces.MultiBinary(5),
    AnyText(10, min_length=1),
    spaces.Dict({"pos": spaces.Discrete(4), "img": spaces.Box(0, 1, (2, 2), np.float32)}),
    spaces.Tuple([spaces.Discrete(2), spaces.Box(-1, 1, (1,), np.float32)]),
]


BIG = np.finfo(np.float64).max  # unbounded numbers: finite bounds (JSON has no infinities)


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_exact_round_trip_through_json_schema(space):
    schema = space_schema(space)
    assert msgpack.unpackb(msgpack.packb(schema)) == schema  # JSON/msgpack-safe (no inf)
    back, left_out = schema_space(schema)
    assert back == space
    assert left_out == []
    assert rebuild(describe(space)) == space


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("binary", [False, True], ids=["json", "msgpack"])
def test_values_survive_the_wire(space, binary):
    space.seed(1)
    value = space.sample()
    wire = msgpack.unpackb(msgpack.packb(to_wire(value, binary)), raw=False)
    back = from_wire(wire, space)
    assert space.contains(back)
    flat = spaces.flatten(space, value) if not isinstance(space, spaces.Text) else value
    back_flat = spaces.flatten(space, back) if not isinstance(space, spaces.Text) else back
    assert np.array_equal(flat, back_flat)


def test_arrays_travel_as_bytes_only_in_binary_form():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert to_wire(arr, False) == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    packed = to_wire({"a": arr, "n": np.int64(3)}, True)
    assert isinstance(packed["a"]["__ndarray__"], bytes)
    assert packed["n"] == 3
    back = decode_arrays(packed)["a"]
    assert back.dtype == np.float32
    assert np.array_equal(back, arr)


def test_plain_json_schema_of_an_env_model():
    act, left = schema_space(EchoAction.model_json_schema())
    assert act == spaces.Dict({"message": AnyText(65536)})
    assert left == []
    obs, left = schema_space(EchoObservation.model_json_schema())
    assert isinstance(obs, spaces.Dict)
    assert set(obs.spaces) == {"echoed_message", "message_length"}
    assert isinstance(obs["message_length"], spaces.Box)
    assert obs.contains({"echoed_message": "hi there!", "message_length": np.asarray(9)})


def test_fields_without_a_space_are_reported():
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "ok": {"type": "boolean"},
            "xy": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        },
    }
    space, left = schema_space(schema)
    assert left == ["tags"]
    assert space == spaces.Dict(
        {"ok": spaces.Discrete(2), "xy": spaces.Box(-BIG, BIG, (2,), np.float64)}
    )


def test_missing_gymnasium_names_the_extra():
    import subprocess
    import sys

    code = "import sys; sys.modules['gymnasium'] = None; import openenv.gym"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "needs the 'gym' extra" in proc.stderr
    assert "pip install 'openenv[gym]'" in proc.stderr


def test_boolean_fields_go_on_the_wire_as_json_booleans():
    from pydantic import BaseModel, StrictBool

    from openenv.gym._spaces import Boolean, json_booleans

    class Act(BaseModel):
        submit: StrictBool = False
        n: int = 0

    space, _ = schema_space(Act.model_json_schema(), skip=frozenset())
    assert isinstance(space, spaces.Dict)
    assert isinstance(space["submit"], Boolean)
    sample = space.sample()
    wire = to_wire(json_booleans(sample, space), binary=False)
    assert type(wire["submit"]) is bool
    assert type(wire["n"]) is int
    assert Act.model_validate(wire).submit is bool(sample["submit"])  # a strict model takes it
