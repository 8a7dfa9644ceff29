"""``openenv.core.harness``: upstream's harness names over ours (``openenv.harness``).

Upstream's turn-based agent adapters (RFC 005) are not provided.
"""

from ...harness import (
    RESERVED_TOOL_NAMES,
    CLIHarnessAdapter,
    HarnessAdapter,
    HarnessRolloutResult,
    HarnessRunLimits,
    LoopOwningSession,
    MCPHarnessAdapter,
    Message,
    ModelStep,
    ModelStepResult,
    ResourceSession,
    ResourceSessionFactory,
    RolloutEvent,
    SessionMCPBridge,
    StepEnvSessionAdapter,
    ToolResult,
    ToolTraceEntry,
    TraceEntry,
    VerifyResult,
    build_harness_rollout_func,
    resolve_env_reward,
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
