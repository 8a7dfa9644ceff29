"""``openenv.core.harness``: upstream's harness names over ours (``openenv.harness``), RFC 005's
adapters among them. Env tools reach an agent over MCP through ``openenv.harness.HarnessMCPBridge``
(a ``ToolSource``, not upstream's FastMCP server): upstream's ``HarnessMCPBridge``,
``build_bridge_server`` (FastMCP) and ``HarnessProcess`` are not provided."""

from ..._lazy import lazy_exports as _lazy_exports
from ...harness import resolve_env_reward as _resolve_env_reward  # noqa: F401 (upstream's private name)

__all__ = """RESERVED_TOOL_NAMES AgenticHarnessAdapter CLIHarnessAdapter HarnessAction HarnessAdapter
HarnessClientMessage HarnessConfig HarnessEnvironment HarnessError HarnessEvent HarnessEventType
HarnessNotRunningError HarnessResponse HarnessRolloutResult HarnessRunLimits HarnessStartupError
HarnessTransport HarnessTurnTimeoutError LoopOwningSession MCPHarnessAdapter Message ModelStep
ModelStepResult ResourceSession ResourceSessionFactory RolloutEvent SessionMCPBridge StepEnvSessionAdapter
ToolResult ToolTraceEntry TraceEntry VerifyResult build_harness_rollout_func events_to_metadata
resolve_env_reward resolve_tool_conflicts""".split()  # noqa: SIM905
_GONE = "FastMCP servers are not bridged here: openenv.harness.HarnessMCPBridge serves a ToolSource"
__getattr__, __dir__ = _lazy_exports(
    __name__,
    dict.fromkeys(__all__, "openenv.harness"),
    __all__,
    missing={
        **dict.fromkeys(["HarnessMCPBridge", "build_bridge_server"], _GONE),
        "HarnessProcess": "agents run through openenv.harness.run_agent in a sandbox",
    },
)
