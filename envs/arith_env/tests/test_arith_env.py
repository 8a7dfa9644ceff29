"""The arith env: deterministic tasks, exact-match reward, the breakdown, typed reset
options, directly and over the protocol."""

from __future__ import annotations

import re

import pytest
from arith_env import EASY, MODELS, ArithAction, ArithEnv, ArithOptions, make_problems, score
from pydantic import ValidationError
from starlette.testclient import TestClient

from openenv import EnvClient
from openenv._exceptions import ValidationFailed
from openenv.client import ASGITransport
from openenv.server import create_app


def test_problems_are_a_function_of_seed_and_options() -> None:
    opts = ArithOptions(digits=3, ops="+-*", rounds=8)
    assert make_problems(5, opts) == make_problems(5, opts)
    assert make_problems(5, opts) != make_problems(6, opts)
    for prompt, value in make_problems(11, opts):
        a, _op, b = prompt[:-1].partition(next(c for c in "+-*" if c in prompt[:-1]))
        assert prompt.endswith("=")
        assert 100 <= int(a) <= 999
        assert 100 <= int(b) <= 999
        assert value == eval(prompt[:-1]) >= 0  # subtraction never goes below zero


def test_one_digit_problems_cover_zero_to_nine() -> None:
    operands = set()
    for seed in range(200):
        prompt, _ = make_problems(seed, ArithOptions(ops="+"))[0]
        a, b = prompt[:-1].split("+")
        operands |= {int(a), int(b)}
    assert operands == set(range(10))


@pytest.mark.parametrize(
    ("answer", "target", "expected"),
    [
        ("42", 42, {"exact": 1.0, "format": 1.0, "digits": 1.0}),
        (" 42 ", 42, {"exact": 1.0, "format": 1.0, "digits": 1.0}),
        ("43", 42, {"exact": 0.0, "format": 1.0, "digits": 0.5}),
        ("142", 42, {"exact": 0.0, "format": 1.0, "digits": 2 / 3}),
        ("7", 42, {"exact": 0.0, "format": 1.0, "digits": 0.0}),
        ("4x", 42, {"exact": 0.0, "format": 0.0, "digits": 0.0}),
        ("", 0, {"exact": 0.0, "format": 0.0, "digits": 0.0}),
        ("-3", -3, {"exact": 1.0, "format": 1.0, "digits": 1.0}),
    ],
)
def test_score_breakdown(answer: str, target: int, expected: dict[str, float]) -> None:
    assert score(answer, target) == pytest.approx(expected)


def test_exact_match_reward_and_breakdown() -> None:
    env = ArithEnv()
    obs = env.reset(seed=3, options=ArithOptions(digits=2, ops="+"))
    a, b = obs.prompt[:-1].split("+")
    right = env.step(ArithAction(answer=str(int(a) + int(b))))
    assert (right.reward, right.done, right.prompt) == (1.0, True, "")
    assert right.metadata["reward_breakdown"] == {"exact": 1.0, "format": 1.0, "digits": 1.0}
    env.reset(seed=3, options=ArithOptions(digits=2, ops="+"))
    wrong = env.step(ArithAction(answer="oops"))
    assert wrong.reward == 0.0
    assert wrong.metadata["reward_breakdown"]["format"] == 0.0
    with pytest.raises(ValueError, match="episode is over"):
        env.step(ArithAction(answer="1"))


def test_rounds_and_partial_credit() -> None:
    env = ArithEnv()
    opts = ArithOptions(rounds=2, ops="*", partial_credit=True)
    problems = make_problems(9, opts)
    first = env.reset(seed=9, options=opts)
    assert first.prompt == problems[0][0]
    one = env.step(ArithAction(answer=str(problems[0][1])))
    assert (one.reward, one.done, one.prompt) == (0.5, False, problems[1][0])
    two = env.step(ArithAction(answer="x"))
    assert (two.reward, two.done) == (0.0, True)
    assert env.state().solved == 1
    assert env.state().problems == [p for p, _ in problems]
    env.reset(seed=9, options=ArithOptions(rounds=1, ops="+", partial_credit=True))
    target = make_problems(9, ArithOptions(ops="+"))[0][1]
    near = env.step(ArithAction(answer=str(target + 10)))  # right last digit, one extra
    breakdown = near.metadata["reward_breakdown"]
    assert near.reward == pytest.approx(0.1 + 0.4 * breakdown["digits"])
    assert 0 < near.reward < 1


def test_constructor_defaults_apply_where_a_reset_is_silent() -> None:
    env = ArithEnv(digits=2, ops="*")
    obs = env.reset(seed=1)
    assert obs.prompt == make_problems(1, ArithOptions(digits=2, ops="*"))[0][0]
    obs = env.reset(seed=1, options=ArithOptions(ops="+"))
    assert obs.prompt == make_problems(1, ArithOptions(digits=2, ops="+"))[0][0]
    with pytest.raises(ValidationError):
        ArithEnv(digits=9)


@pytest.mark.parametrize("bad", [{"digits": 0}, {"ops": "/"}, {"rounds": 99}, {"level": 1}])
def test_bad_reset_options_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ArithOptions.model_validate(bad)


def test_over_the_protocol() -> None:
    with (
        ASGITransport(create_app(ArithEnv)) as transport,
        EnvClient("http://env", MODELS, transport=transport) as env,
    ):
        first = env.reset(seed=4, digits=2, ops="-", rounds=2)
        again = env.reset(seed=4, digits=2, ops="-", rounds=2)
        assert first.observation.prompt == again.observation.prompt
        assert first.observation.prompt == make_problems(4, ArithOptions(digits=2, ops="-", rounds=2))[0][0]
        a, b = first.observation.prompt[:-1].split("-")
        result = env.step(ArithAction(answer=str(int(a) - int(b))))
        assert result.reward == 0.5
        assert not result.done
        assert result.observation.metadata["reward_breakdown"]["exact"] == 1.0
        with pytest.raises(ValidationFailed):
            env.reset(seed=1, digits=0)


def test_schema_publishes_the_reset_options() -> None:
    with TestClient(create_app(ArithEnv)) as http:
        schema = http.get("/schema").json()
    assert schema["reset_options"]["properties"]["digits"]["maximum"] == 6
    assert schema["action"]["required"] == ["answer"]
    assert "prompt" in schema["observation"]["properties"]


def test_max_operand_bounds_the_operands() -> None:
    operands, sums = set(), set()
    for seed in range(300):
        prompt, value = make_problems(seed, EASY)[0]
        a, b = prompt[:-1].split("+")
        operands |= {int(a), int(b)}
        sums.add(value)
    assert operands == {0, 1, 2, 3}
    assert sums == set(range(7))  # one-character answers
    for prompt, _ in make_problems(2, ArithOptions(digits=2, max_operand=12, ops="+-*", rounds=8)):
        assert all(10 <= int(x) <= 12 for x in re.split(r"[+\-*]", prompt[:-1]))


@pytest.mark.parametrize("bad", [{"max_operand": 10}, {"digits": 2, "max_operand": 9}, {"max_operand": -1}])
def test_max_operand_outside_the_digits_range_is_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="max_operand"):
        ArithOptions.model_validate(bad)


@pytest.mark.parametrize(
    "bad",
    [{"partial_credit": 0}, {"partial_credit": "true"}, {"digits": True}, {"rounds": "2"},
     {"max_operand": False}],
)
def test_reset_options_take_json_types_only(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ArithOptions.model_validate(bad)
    assert ArithOptions.model_validate({"digits": 2.0, "partial_credit": True}).digits == 2


@pytest.mark.parametrize("digits", [None, 1, 2, 3, 6])
@pytest.mark.parametrize("max_operand", [None, 0, 9, 10, 99, 100, 999, 1000, 999_999, 1_000_000])
def test_the_schema_states_the_cross_field_check(digits: int | None, max_operand: int | None) -> None:
    options: dict[str, int | None] = {} if digits is None else {"digits": digits}
    options["max_operand"] = max_operand  # null is allowed, and checked as absent
    try:
        ArithOptions.model_validate(options)
        accepted = True
    except ValidationError:
        accepted = False
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with the 'authoring' extra")
    valid = jsonschema.Draft202012Validator(ArithOptions.model_json_schema()).is_valid(options)
    assert valid == accepted


def test_easy_level_as_server_defaults_over_the_protocol() -> None:
    app = create_app(ArithEnv, env_kwargs=EASY.model_dump(exclude_unset=True))
    with ASGITransport(app) as transport, EnvClient("http://env", MODELS, transport=transport) as env:
        first = env.reset(seed=5)  # what the trainer sends: a seed only
        assert first.observation.prompt == make_problems(5, EASY)[0][0]
        a, b = first.observation.prompt[:-1].split("+")
        wrong = str((int(a) + int(b) + 1) % 10)
        assert env.step(ArithAction(answer=wrong)).reward == pytest.approx(0.1)  # a digit, not the sum
        env.reset(seed=5)
        assert env.step(ArithAction(answer=str(int(a) + int(b)))).reward == 1.0
        bigger = env.reset(seed=5, digits=2, max_operand=20)
        assert (
            bigger.observation.prompt
            == make_problems(5, ArithOptions(digits=2, max_operand=20, ops="+"))[0][0]
        )
        with pytest.raises(ValidationFailed, match="max_operand"):
            env.reset(seed=5, digits=2)  # two digits, but the server's max_operand is 3


def test_the_answers_are_named_once_the_episode_ends_never_before() -> None:
    """A wrong answer leaves the right one unseen until the last step (the validator's
    ``semantic.oracle_max`` plays the named answer; ``no_solution_leakage`` checks the
    earlier replies); over the protocol, as a client sees it."""
    opts = {"digits": 2, "ops": "+*", "rounds": 3}
    answers = [str(v) for _, v in make_problems(6, ArithOptions(**opts))]
    with (
        ASGITransport(create_app(ArithEnv)) as transport,
        EnvClient("http://env", MODELS, transport=transport) as env,
    ):
        first = env.reset(seed=6, **opts)
        assert not set(answers) & set(first.observation.metadata.values())
        for _ in range(2):
            mid = env.step(ArithAction(answer="-1"))
            assert not mid.done
            assert set(mid.observation.metadata) == {"reward_breakdown"}
        last = env.step(ArithAction(answer="-1"))
        assert last.done
        assert last.observation.metadata["expected"] == answers[-1]
        assert last.observation.metadata["answers"] == answers
        env.reset(seed=6, rounds=1)
        named = env.step(ArithAction(answer="#")).observation.metadata["expected"]
        env.reset(seed=6, rounds=1)
        assert env.step(ArithAction(answer=named)).reward == 1.0
