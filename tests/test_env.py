"""``openenv._env``: models from generic parameters, metadata, execution, abstract API."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv import Action, AsyncEnvironment, Environment, Execution, Observation, State

from ._envs import AsyncTestEnv, SyncTestEnv, TAction, TObservation, TState


class MyAction(Action):
    text: str


class MyObs(Observation):
    text: str = ""


class MyState(State):
    seen: int = 0


class Documented(Environment[MyAction, MyObs, MyState]):
    """First line of the docs.

    More words.
    """

    def reset(self, *, seed=None, episode_id=None, options=None) -> MyObs:
        return MyObs()

    def step(self, action: MyAction) -> MyObs:
        return MyObs(text=action.text)

    def state(self) -> MyState:
        return MyState()


class _Answers:
    """``reset``, ``step`` and ``state`` answering with defaults of the env's own models
    (for the envs below that only test how those models are found)."""

    def reset(self, **kw: Any) -> Any:
        return self.observation_model()  # type: ignore[attr-defined]

    def step(self, action: Any) -> Any:
        return self.observation_model()  # type: ignore[attr-defined]

    def state(self) -> Any:
        return self.state_model()  # type: ignore[attr-defined]


def test_models_come_from_generic_parameters():
    assert Documented.action_model is MyAction
    assert Documented.observation_model is MyObs
    assert Documented.state_model is MyState
    assert SyncTestEnv.action_model is TAction
    assert AsyncTestEnv.observation_model is TObservation
    assert AsyncTestEnv.state_model is TState


def test_bases_keep_the_generic_defaults():
    assert Environment.action_model is Action
    assert Environment.observation_model is Observation
    assert Environment.state_model is State


def test_subclass_of_a_concrete_env_inherits_its_models():
    class Sub(Documented):
        pass

    assert (Sub.action_model, Sub.observation_model, Sub.state_model) == (MyAction, MyObs, MyState)


def test_explicit_model_attribute_wins_over_the_generic_parameter():
    class Other(Action):
        n: int = 0

    class Explicit(_Answers, Environment[MyAction, MyObs, MyState]):
        action_model = Other

    assert Explicit.action_model is Other
    assert Explicit.observation_model is MyObs


def test_non_pydantic_generic_parameter_is_a_type_error():
    with pytest.raises(TypeError, match="not a pydantic model"):
        class Bad(Environment[int, MyObs, MyState]):  # type: ignore[type-var]
            pass


def test_unparameterised_subclass_keeps_base_models():
    class Plain(_Answers, Environment):  # type: ignore[type-arg]
        pass

    assert Plain.action_model is Action
    assert Plain.state_model is State


def test_metadata_defaults_to_class_name_and_first_doc_line():
    meta = Documented.metadata()
    assert meta.name == "Documented"
    assert meta.description == "First line of the docs."
    assert meta.version is None
    assert meta.readme_content is None


def test_metadata_uses_class_overrides():
    class Named(Documented):
        env_name = "named_env"
        env_description = "Explicit description"
        env_version = "2.1"

    meta = Named.metadata()
    assert (meta.name, meta.description, meta.version) == ("named_env", "Explicit description", "2.1")


def test_metadata_without_docstring_uses_the_name():
    undocumented = type("Undocumented", (Documented,), {"__doc__": None})
    assert undocumented.metadata().description == "Undocumented"  # the parent's doc is not used

    class Bare(_Answers, Environment[MyAction, MyObs, MyState]):
        pass

    assert Bare.metadata().description == "Bare"
    assert Bare.metadata().name == "Bare"


def test_metadata_first_doc_line_is_stripped():
    spaced = type("Spaced", (Documented,), {"__doc__": "\n    Indented first line.  \n\n    More.\n"})
    assert spaced.metadata().description == "Indented first line."


def test_execution_defaults_and_values():
    assert Documented.execution is Execution.AUTO
    assert [e.value for e in Execution] == ["auto", "inline", "thread", "dedicated_thread"]
    assert not hasattr(AsyncEnvironment, "execution")


def test_async_env_default_close_is_awaitable():
    class A(AsyncEnvironment[MyAction, MyObs, MyState]):
        async def reset(self, **kw: Any) -> MyObs:
            return MyObs()

        async def step(self, action: MyAction) -> MyObs:
            return MyObs(text=action.text)

        async def state(self) -> MyState:
            return MyState()

    env = A()
    assert asyncio.run(env.close()) is None
    assert asyncio.run(env.step(MyAction(text="x"))).text == "x"
    assert A.action_model is MyAction
