"""Shared by the TRL bridge tests: the arith env in-process, a random local model, a GRPO config."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arith_env import ArithEnv
from trl import GRPOConfig

from openenv.client import ASGITransport
from openenv.server import create_app
from openenv.train import random_hf_model

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="module")
def transport() -> Iterator[ASGITransport]:
    with ASGITransport(create_app(ArithEnv, env_kwargs={"digits": 1, "ops": "+"})) as t:
        yield t


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return random_hf_model(tmp_path_factory.mktemp("model") / "m", seed=0)


def grpo_config(out: Path, **kw: Any) -> GRPOConfig:
    base: dict[str, Any] = {
        "output_dir": str(out),
        "max_steps": 2,
        "per_device_train_batch_size": 8,
        "num_generations": 4,
        "max_completion_length": 3,
        "learning_rate": 1e-3,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": True,
        "disable_tqdm": True,
        "seed": 0,
    }
    return GRPOConfig(**{**base, **kw})
