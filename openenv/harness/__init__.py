"""``openenv.harness``: driving an env through tools, one session per rollout.

An env offers a ``ResourceSession`` per rollout (``StepEnvSessionAdapter`` makes one
from any reset/step client); a ``HarnessAdapter`` drives it, ``MCPHarnessAdapter``
with the trainer sampling each turn; ``build_harness_rollout_func`` turns that into a
TRL ``rollout_func``. ``openenv.harness.collect`` writes rollouts to a dataset.
``openenv.core.harness`` gives these under upstream OpenEnv's names; upstream's
turn-based agent adapters (RFC 005) are not provided.
"""

from ._adapters import CLIHarnessAdapter, HarnessAdapter, MCPHarnessAdapter
from ._bridge import SessionMCPBridge
from ._rollout import build_harness_rollout_func, resolve_env_reward
from ._session import LoopOwningSession, ResourceSession, ResourceSessionFactory, TraceEntry
from ._step_session import StepEnvSessionAdapter
from ._types import (
    RESERVED_TOOL_NAMES,
    HarnessRolloutResult,
    HarnessRunLimits,
    Message,
    ModelStep,
    ModelStepResult,
    RolloutEvent,
    Tool,
    ToolResult,
    ToolTraceEntry,
    VerifyResult,
)

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
    "Tool",
    "ToolResult",
    "ToolTraceEntry",
    "TraceEntry",
    "VerifyResult",
    "build_harness_rollout_func",
    "resolve_env_reward",
]
