"""``openenv.core.harness``: upstream's harness API for driving an env through tools.

An env offers a ``ResourceSession`` per rollout (``StepEnvSessionAdapter`` makes one
from any reset/step client); a ``HarnessAdapter`` drives it, ``MCPHarnessAdapter``
with the trainer sampling each turn; ``build_harness_rollout_func`` turns that into a
TRL ``rollout_func``. ``openenv.core.harness.collect`` writes rollouts to a dataset.
Upstream's turn-based agent adapters (RFC 005) are not provided.
"""

from ..env_server.mcp_types import RESERVED_TOOL_NAMES
from ._adapters import CLIHarnessAdapter, HarnessAdapter, MCPHarnessAdapter
from ._bridge import SessionMCPBridge
from ._rollout import build_harness_rollout_func, resolve_env_reward
from ._session import LoopOwningSession, ResourceSession, ResourceSessionFactory, TraceEntry
from ._step_session import StepEnvSessionAdapter
from ._types import (
    HarnessRolloutResult,
    HarnessRunLimits,
    Message,
    ModelStep,
    ModelStepResult,
    RolloutEvent,
    ToolResult,
    ToolTraceEntry,
    VerifyResult,
)

#: Upstream's private name for ``resolve_env_reward``, which its examples import.
_resolve_env_reward = resolve_env_reward

__all__ = [
    "RESERVED_TOOL_NAMES",
    "CLIHarnessAdapter",
    "HarnessAdapter",
    "HarnessRolloutResult",
    "HarnessRunLimits",
    "LoopOwningSession",
    "MCPHarnessAdapter",
    "Message",
    "ModelStep",
    "ModelStepResult",
    "ResourceSession",
    "ResourceSessionFactory",
    "RolloutEvent",
    "SessionMCPBridge",
    "StepEnvSessionAdapter",
    "ToolResult",
    "ToolTraceEntry",
    "TraceEntry",
    "VerifyResult",
    "build_harness_rollout_func",
    "resolve_env_reward",
]
