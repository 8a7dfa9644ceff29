"""``openenv.harness``: driving an env through tools, one session per rollout.

An env offers a ``ResourceSession`` per rollout (``StepEnvSessionAdapter`` makes one
from any reset/step client); a ``HarnessAdapter`` drives it, ``MCPHarnessAdapter``
with the trainer sampling each turn; ``build_harness_rollout_func`` turns that into a
TRL ``rollout_func``. ``openenv.harness.collect`` writes rollouts to a dataset.
``openenv.core.harness`` gives these under upstream OpenEnv's names.

Agents that own their loop (RFC 005): an ``AgenticHarnessAdapter`` runs one turn by turn,
``HarnessEnvironment`` makes an env of it, ``harness_app`` serves those on ``/harness``;
``CLIAgentAdapter`` is a real agent CLI (``AGENTS``: mini-swe-agent, Claude Code, Codex,
Gemini CLI, OpenCode) run in a sandbox whose one way out is its capture session (``run_agent``),
``terminal_task_env`` one on a terminal task scored by its verifier, ``run_agent_in_image``
one in a container of the terminal env's Docker image (``CLIAgentAdapter(image=InImage(...))``,
``terminal_task_env(image=...)``: each turn such a run; ``AgentOptions``: both runs' options).
An env's own tools (a ``ToolSource``) reach the agent as an MCP server (``HarnessMCPBridge``, relayed into
its sandbox: ``HarnessEnvironment(adapter, tools=...)``; into its container:
``run_agent_in_image(..., tools_url=...)``); ``ScriptedModel``
is a scripted chat backend to run them against (a test double). See docs/agents.md.
"""

from .._lazy import lazy_exports
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

_LAZY = {
    **dict.fromkeys(
        [
            "AgenticHarnessAdapter", "HarnessClientMessage", "HarnessConfig", "HarnessError", "HarnessEvent",
            "HarnessEventType", "HarnessNotRunningError", "HarnessProtocolError", "HarnessResponse",
            "HarnessStartupError", "HarnessTransport", "HarnessTurnTimeoutError", "events_to_metadata",
        ],
        "._agentic",
    ),
    "HarnessAction": "._harness_env",
    "HarnessEnvironment": "._harness_env",
    **dict.fromkeys(
        ["AGENTS", "AgentCLI", "AgentOptions", "AgentRun", "agents_dir", "install", "run_agent",
         "run_with_endpoint"],
        "._agents",
    ),
    **dict.fromkeys(
        ["CLIAgentAdapter", "InImage", "TerminalTaskHarness", "terminal_task_env"], "._cli_agent"
    ),
    **dict.fromkeys(["ImageAgentRun", "run_agent_in_image", "run_in_image"], "._image_agent"),
    "ScriptedModel": "._scripted",
    **dict.fromkeys(
        ["FastMCPTools", "HarnessMCPBridge", "ToolSource", "resolve_tool_conflicts"], "._tool_bridge"
    ),
    "harness_app": "._route",
    "harness_route": "._route",
}  # fmt: skip

__all__ = [
    *_LAZY,
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

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
