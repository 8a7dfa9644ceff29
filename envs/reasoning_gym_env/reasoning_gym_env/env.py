"""The reasoning-gym environment: behaviour only. ``reasoning_gym`` is imported on first use."""

from __future__ import annotations

import functools
import json
import random
import uuid
from typing import Any, ClassVar

from pydantic import ValidationError, model_validator
from pydantic_core import PydanticCustomError

from openenv import Environment, Execution, ValidationFailed
from openenv.tasks import TaskNotFound

from ._families import COMPOSITE, FamilyTaskSet
from .models import RGAction, RGObservation, RGOptions, RGState


def families() -> list[str]:
    """The reasoning-gym dataset names this env serves (every registered one), sorted."""
    return [task.id for task in ReasoningGymEnv.task_set.range()]


@functools.lru_cache(maxsize=64)
def _dataset(family: str, size: int, seed: int, config_json: str) -> Any:
    """The family's dataset (its entries are generated on demand, from ``seed`` and the index)."""
    import reasoning_gym  # type: ignore[import-untyped]

    if family not in families() and family != COMPOSITE:
        shown = ", ".join(families()[:8])
        raise TaskNotFound(
            f"unknown reasoning-gym family {family!r} (known: {shown}, ...; {len(families())} in all)",
            family=family,
        )
    config = json.loads(config_json)
    if family == COMPOSITE:
        config["datasets"] = _mix(config.get("datasets"))
    try:
        return reasoning_gym.create_dataset(family, size=size, seed=seed, **config)
    except (TypeError, ValueError, AssertionError) as exc:  # unknown or out-of-range config fields
        raise TaskNotFound(
            f"invalid config for reasoning-gym family {family!r}: {exc}", family=family
        ) from None


def _mix(specs: Any) -> list[Any]:
    """``composite``'s ``datasets`` as JSON (``[{"name", "weight", "config"?}, ...]``, each
    name a family) as reasoning-gym's ``DatasetSpec`` objects, which it alone takes."""
    from reasoning_gym.composite import DatasetSpec  # type: ignore[import-untyped]

    shape = TaskNotFound(
        f"invalid config for reasoning-gym family {COMPOSITE!r}: it mixes other families: give "
        'config={"datasets": [{"name": FAMILY, "weight": W, "config": {...}}, ...]}',
        family=COMPOSITE,
    )
    if not isinstance(specs, list) or not specs or not all(isinstance(s, dict) for s in specs):
        raise shape
    out = []
    for spec in specs:
        if set(spec) - {"name", "weight", "config"} or not isinstance(spec.get("config", {}), dict):
            raise shape
        name, weight = spec.get("name"), spec.get("weight", 1.0)
        if name not in families():
            raise TaskNotFound(f"composite: {name!r} is not a reasoning-gym family to mix", family=COMPOSITE)
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise TaskNotFound(f"composite: the weight of {name!r} is not a number", family=COMPOSITE)
        out.append(DatasetSpec(name=name, weight=float(weight), config=dict(spec.get("config", {}))))
    return out


def dataset_of(options: RGOptions) -> Any:
    """The dataset ``options`` describe; ``TaskNotFound`` for an unknown family or a config
    the family refuses (the Task API lists the families: no such task)."""
    config = json.dumps(options.config, sort_keys=True)
    return _dataset(options.family, options.size, options.dataset_seed, config)


class ServerDefaults(RGOptions):
    """``RGOptions`` as ``--env-kwargs``: the family and its config are checked when the
    server starts (the client-side model cannot: it does not import reasoning-gym)."""

    @model_validator(mode="after")
    def _known_family(self) -> ServerDefaults:
        try:
            dataset_of(self)
        except TaskNotFound as exc:
            raise PydanticCustomError("unknown_family", "{reason}", {"reason": str(exc)}) from None
        return self


class ReasoningGymEnv(Environment[RGAction, RGObservation, RGState]):
    """Answer one reasoning-gym question; reward is the family's own ``score_answer`` in [0, 1].

    Reset options (``RGOptions``: ``family``, ``size``, ``dataset_seed``, ``index``,
    ``config``; the constructor's keyword arguments are the defaults) choose the question;
    the episode ends after one answer.
    """

    env_name = "reasoning_gym_env"
    env_version = "0.1.0"
    execution = Execution.AUTO  # most families generate in microseconds; some (sudoku, mazes) do not
    reset_options_model = RGOptions
    task_set: ClassVar[FamilyTaskSet] = FamilyTaskSet()  # the Task API lists the families
    env_kwargs_model = ServerDefaults  # --env-kwargs: checked when the server starts

    def __init__(self, **defaults: Any) -> None:
        """``defaults``: ``RGOptions`` fields used where a reset does not set them
        (``openenv serve reasoning_gym --env-kwargs '{"family": "chain_sum"}'``)."""
        self._defaults = RGOptions(**defaults)
        dataset_of(self._defaults)  # an unknown family fails at startup, not at the first reset
        self._state = RGState()
        self._dataset: Any = None
        self._entry: dict[str, Any] | None = None

    def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Any = None,
    ) -> RGObservation:
        if options is None:
            options = RGOptions()
        elif not isinstance(options, RGOptions):
            options = RGOptions.model_validate(options)
        options = _by_task_id(options)
        merged = {**self._defaults.model_dump(), **options.model_dump(include=options.model_fields_set)}
        try:
            options = RGOptions.model_validate(merged)
        except ValidationError as exc:
            raise ValidationFailed(
                f"reset options with the server's defaults: {exc.errors()[0]['msg']}"
            ) from None
        dataset = dataset_of(options)
        if options.index is not None:
            if options.index >= options.size:
                raise TaskNotFound(f"index {options.index} is beyond the dataset's size {options.size}")
            index = options.index
        else:
            index = random.Random(seed).randrange(options.size)
        self._dataset = dataset
        self._entry = dataset[index]
        self._state = RGState(episode_id=episode_id or uuid.uuid4().hex, family=options.family, index=index)
        return RGObservation(prompt=self._entry["question"], family=options.family)

    def step(self, action: RGAction) -> RGObservation:
        if self._entry is None or self._state.answered:
            raise ValueError("the episode is over: reset to start another")
        raw = self._dataset.score_answer(action.answer, self._entry)
        value = min(1.0, max(0.0, float(raw or 0.0)))
        self._state.step_count += 1
        self._state.answered = True
        self._state.score = value
        return RGObservation(
            prompt="",
            family=self._state.family,
            reward=value,
            done=True,
            metadata={"score": value, "expected": str(self._entry["answer"])},
        )

    def state(self) -> RGState:
        return self._state.model_copy()


def _by_task_id(options: RGOptions) -> RGOptions:
    """``task_id`` (a Task API id, i.e. a family) as ``family``; a split other than
    ``train`` or a family that contradicts it is a typed error."""
    if options.split not in (None, "train"):
        raise TaskNotFound(f"no split {options.split!r}: the families are split 'train'", split=options.split)
    if options.task_id is None:
        return options
    if "family" in options.model_fields_set and options.family != options.task_id:
        raise TaskNotFound(f"task_id {options.task_id!r} and family {options.family!r} disagree: give one")
    return options.model_copy(update={"family": options.task_id})
