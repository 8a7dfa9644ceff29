"""Gymnasium both ways (the ``gym`` extra: ``pip install 'openenv[gym]'``).

* ``RemoteEnv(url)``: any env server as a ``gymnasium.Env`` (passes
  ``gymnasium.utils.env_checker.check_env``); registered as ``"openenv/Remote-v0"``::

      import gymnasium, openenv.gym
      env = gymnasium.make("openenv/Remote-v0", url="http://127.0.0.1:8000")

  (or, without importing ``openenv.gym`` first: ``"openenv.gym:openenv/Remote-v0"``).
* ``RemoteVectorEnv(url, num_envs)``: N sessions stepped in one batch frame per step.
* ``gym_env_class("CartPole-v1")``: any Gymnasium env served by ``create_app`` /
  ``openenv serve gym:CartPole-v1`` (or ``module:Class`` for a ``gymnasium.Env``).
"""

from .._extras import require as _require

_require("gymnasium", extra="gym", feature="openenv.gym")

import gymnasium  # noqa: E402

from ._arrays import WireValue  # noqa: E402
from ._remote import RemoteEnv  # noqa: E402
from ._served import GymAction, GymEnvironment, GymObservation, gym_env_class  # noqa: E402
from ._spaces import AnyText, schema_space, space_schema  # noqa: E402
from ._vector import RemoteVectorEnv  # noqa: E402

__all__ = [
    "AnyText",
    "GymAction",
    "GymEnvironment",
    "GymObservation",
    "RemoteEnv",
    "RemoteVectorEnv",
    "WireValue",
    "gym_env_class",
    "schema_space",
    "space_schema",
]

if "openenv/Remote-v0" not in gymnasium.registry:
    gymnasium.register(
        "openenv/Remote-v0",
        entry_point="openenv.gym._remote:RemoteEnv",
        vector_entry_point="openenv.gym._vector:RemoteVectorEnv",
        disable_env_checker=True,
    )
