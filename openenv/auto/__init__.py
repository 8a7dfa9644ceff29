"""Env clients and action classes by env name (upstream OpenEnv's ``openenv.auto``).

``AutoEnv.from_hub("echo")`` gives a client of the installed ``openenv-echo*`` package,
``AutoEnv.from_hub("org/name")`` one of a Hugging Face Space (its package installed
first, with consent); ``AutoAction.from_hub(...)`` gives the env's action class.
Imported on demand only: ``import openenv`` does not load it. A name layer over
``openenv.resolve``, where the implementation lives; upstream's module paths
(``auto_env``, ``auto_action``, ``_discovery``) keep the names upstream's users import
and patch.
"""

from .auto_action import AutoAction
from .auto_env import AutoEnv

__all__ = ["AutoAction", "AutoEnv"]
