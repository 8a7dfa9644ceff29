"""Policies for ``openenv eval``: who plays the episodes.

    from openenv.policy import OpenAIPolicy, policy_from_spec
    policy = policy_from_spec("openai:gpt-4o-mini")          # or OpenAIPolicy("gpt-4o-mini")

A ``Policy`` makes one ``Agent`` per episode; the agent answers each observation with a
``Decision`` (an action, the chat messages of the turn, tool calls, token ids and
logprobs). Shipped: ``NullPolicy`` and ``RandomPolicy`` (baselines), ``OraclePolicy``
(the task's reference solution), ``CallablePolicy`` (a Python function),
``OpenAIPolicy`` and ``AnthropicPolicy`` (the official SDKs; the ``eval`` extra) and
``LocalPolicy`` (a local checkpoint, batched; the ``train`` extra). ``openenv policy
serve CHECKPOINT`` serves a checkpoint as an OpenAI-compatible endpoint
(``openenv.policy.serve_app``).
"""

from .._lazy import lazy_exports as _lazy_exports
from ._base import Agent, Decision, Episode, Policy
from ._baselines import CallablePolicy, NullPolicy, RandomPolicy
from ._chat import is_transient, parse_tool_calls
from ._oracle import NoSolution, OraclePolicy
from ._space import ActionSpace, Tool, observation_text
from ._spec import policy_from_spec

_LAZY = {
    "AnthropicPolicy": "._anthropic",
    "LocalModel": "._local",
    "LocalPolicy": "._hf",
    "OpenAIPolicy": "._openai",
    "serve_app": "._serve",
}


__all__ = [
    "ActionSpace",
    "Agent",
    "AnthropicPolicy",
    "CallablePolicy",
    "Decision",
    "Episode",
    "LocalModel",
    "LocalPolicy",
    "NoSolution",
    "NullPolicy",
    "OpenAIPolicy",
    "OraclePolicy",
    "Policy",
    "RandomPolicy",
    "Tool",
    "is_transient",
    "observation_text",
    "parse_tool_calls",
    "policy_from_spec",
    "serve_app",
]

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, __all__)
