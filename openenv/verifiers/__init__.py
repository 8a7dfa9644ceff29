"""verifiers tasksets as openenv envs: served directly, or written out as an env package.

verifiers (PyPI ``verifiers``, the 0.4 ``verifiers.v1`` stack) is imported on first
use; without it, loading a taskset raises ``MissingExtra`` naming the ``verifiers``
extra. A taskset's tasks are the env's task set (the Task API lists them) and each
task's own rubric (its ``@vf.reward`` methods, plugged rewards and judges) is the
reward::

    openenv serve verifiers:my_taskset             # an installed module with a vf.Taskset
    openenv import my_taskset envs/my_taskset_env  # an env package calling this adapter

    from openenv.verifiers import env_class
    MyEnv = env_class("my_taskset", config={"difficulty": "hard"})

One episode is one task: the reset shows the prompt (``prompt`` text and chat
``messages``, RFC 0002), the one step takes the completion and ends the episode.
Tasks that need a runtime (a container, tools, their own ``setup``) are refused.
"""

from ._env import VerifiersEnv, env_class
from ._load import REQUIREMENT
from ._models import (
    MODELS,
    ChatMessage,
    VerifiersAction,
    VerifiersObservation,
    VerifiersOptions,
    VerifiersState,
)
from ._package import write_env_package
from ._taskset import VerifiersTaskSet

__all__ = [
    "MODELS",
    "REQUIREMENT",
    "ChatMessage",
    "VerifiersAction",
    "VerifiersEnv",
    "VerifiersObservation",
    "VerifiersOptions",
    "VerifiersState",
    "VerifiersTaskSet",
    "env_class",
    "write_env_package",
]
