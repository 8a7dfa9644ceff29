"""``openenv._types``: the JSON integer of the wire models."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field, ValidationError

from openenv import JSON_INTEGER, JsonInt


class Counts(BaseModel):
    plain: JsonInt = 0
    bounded: Annotated[int, Field(ge=1, le=6), JSON_INTEGER] | None = None


@pytest.mark.parametrize("value", [True, False, "3", b"3", 3.5])
@pytest.mark.parametrize("name", ["plain", "bounded"])
def test_json_integer_refuses_what_json_schema_integer_refuses(name: str, value: object) -> None:
    with pytest.raises(ValidationError):
        Counts.model_validate({name: value})
    with pytest.raises(ValidationError):  # the JSON text too
        Counts.model_validate_json(f'{{"{name}": {str(value).lower() if isinstance(value, bool) else 3.5}}}')


def test_json_integer_takes_integral_numbers_and_keeps_its_constraints_in_the_schema() -> None:
    assert Counts.model_validate_json('{"plain": 13.0, "bounded": 6}') == Counts(plain=13, bounded=6)
    with pytest.raises(ValidationError):
        Counts(bounded=7)
    bounded = Counts.model_json_schema()["properties"]["bounded"]["anyOf"][0]
    assert bounded == {"type": "integer", "minimum": 1, "maximum": 6}
