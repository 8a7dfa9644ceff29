"""The coding env's wire models take JSON types only, as their JSON Schema says
(``tests/server/test_schemathesis.py`` fuzzes the served env)."""

from __future__ import annotations

import pytest
from coding_env import CodeAction
from coding_env.env import CodingResetOptions
from pydantic import ValidationError


@pytest.mark.parametrize("submit", [0, 1, "true"])
def test_submit_is_a_json_boolean(submit: object) -> None:
    with pytest.raises(ValidationError, match="submit"):
        CodeAction.model_validate({"code": "", "submit": submit})
    assert CodeAction.model_validate_json('{"submit": true}').submit is True


@pytest.mark.parametrize("bad", [{"max_steps": True}, {"index": False}, {"max_steps": "3"}, {"index": 1.5}])
def test_reset_options_integers_are_json_integers(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        CodingResetOptions.model_validate(bad)
    assert CodingResetOptions.model_validate({"max_steps": 3.0, "index": 2}).max_steps == 3
    schema = CodingResetOptions.model_json_schema()["properties"]
    assert schema["max_steps"]["anyOf"][0] == {"type": "integer", "minimum": 1}
