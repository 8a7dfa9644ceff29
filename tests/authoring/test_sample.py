"""Actions made from JSON Schemas: every sample validates against its schema."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from openenv import Action
from openenv.authoring._sample import sample_instance


class Move(BaseModel):
    kind: Literal["move"] = "move"
    dx: int = Field(ge=-1, le=1)


class Say(BaseModel):
    kind: Literal["say"]
    text: str = Field(min_length=8, max_length=10)


class Tools(Action):
    cmd: Annotated[Move | Say, Field(discriminator="kind")]
    count: int = Field(gt=3)
    ratio: float = Field(ge=0.5, le=0.75)
    flags: list[bool] = Field(min_length=2)
    mode: Literal["a", "b"]
    note: str | None
    pair: tuple[int, str]


def test_pydantic_action_with_tagged_union():
    schema = Tools.model_json_schema()
    value = sample_instance(schema)
    assert list(Draft202012Validator(schema).iter_errors(value)) == []
    Tools.model_validate(value)
    assert value["cmd"] == {"kind": "move", "dx": -1}
    assert (value["count"], value["mode"], value["note"]) == (4, "a", "hello")


def test_string_bounds():
    assert sample_instance({"type": "string", "minLength": 8}) == "helloxxx"
    assert sample_instance({"type": "string", "maxLength": 2}) == "he"


def test_unsampleable_schema_raises():
    with pytest.raises(ValueError, match="cannot follow"):
        sample_instance({"$ref": "http://elsewhere/schema"})
